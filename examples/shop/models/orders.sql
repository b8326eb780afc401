{{ config(materialized='incremental', incremental_strategy='append') }}
{#- `batch` stands for new data arriving: run 1 loads batch 1, `--vars '{batch: 2}'` the next. -#}
select order_id, customer_id, cast(order_date as date) as order_date, status, amount
from {{ ref('raw_orders') }}
where batch <= {{ var('batch', 1) }}
{% if is_incremental() %}
  and order_id > (select coalesce(max(order_id), 0) from {{ this }})
{% endif %}
