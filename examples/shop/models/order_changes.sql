{{ config(materialized='table') }}
{#- Every change ever made to `orders`, from its change data feed (on since version 0). -#}
select order_id, status, _change_type, _commit_version
from {{ deltamerge.table_changes(ref('orders'), 0) }}
