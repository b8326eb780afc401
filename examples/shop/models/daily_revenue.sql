{{ config(materialized='incremental', incremental_strategy='insert_overwrite', partition_by=['order_date']) }}
{#- Recomputes only the days that received orders in this run; other days' files stay. -#}
select order_date, count(*) as orders, sum(amount) as revenue
from {{ ref('orders') }}
{% if is_incremental() %}
where order_date >= (select min(order_date) from {{ ref('orders') }} where order_id > {{ var('last_order_id', 5) }})
{% endif %}
group by order_date
