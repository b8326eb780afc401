{{ config(materialized='incremental', incremental_strategy='insert_overwrite', partition_by=['order_date']) }}
select order_date, count(*) as orders, sum(amount) as revenue
from {{ ref('orders') }}
group by order_date
