{{ config(
    materialized='incremental',
    incremental_strategy='delta_merge',
    unique_key='order_id',
    change_data_feed=True,
    when_matched=[
        {'condition': "DBT_INTERNAL_SOURCE.status = 'cancelled'", 'action': 'delete'},
        {'condition': "DBT_INTERNAL_SOURCE.status != DBT_INTERNAL_DEST.status", 'action': 'update', 'set': '*'},
    ],
    when_not_matched=[
        {'condition': "DBT_INTERNAL_SOURCE.status != 'cancelled'", 'action': 'insert', 'values': '*'},
    ],
) }}
{#- `batch` stands for new data arriving: run 1 loads batch 1, `--vars '{batch: 2}'` the next,
    which brings new orders and status changes of old ones. -#}
select order_id, customer_id, cast(order_date as date) as order_date, status, amount
from {{ ref('raw_orders') }}
where batch = {{ var('batch', 1) }}
