{{ config(materialized='view') }}
select c.customer_id, c.name, count(o.order_id) as orders
from {{ ref('customers') }} c left join {{ ref('orders') }} o using (customer_id)
group by c.customer_id, c.name
