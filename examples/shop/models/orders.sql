{{ config(materialized='incremental', incremental_strategy='append') }}
select order_id, customer_id, cast(order_date as date) as order_date, status, amount
from {{ ref('raw_orders') }}
{% if is_incremental() %}
where order_id > (select coalesce(max(order_id), 0) from {{ this }})
{% endif %}
