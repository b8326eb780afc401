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
{#- `batch` stands for new data arriving: run 1 loads batch 1, `SHOP_BATCH=2` the next, which
    brings new orders and status changes of old ones (an environment variable, not `--vars`: a
    changed var makes dbt re-parse the whole project; `shop_batch()` reads it as the model runs,
    so a changed value costs no parse at all). -#}
select order_id, customer_id, cast(order_date as date) as order_date, status, amount
from {{ ref('raw_orders') }}
where batch = {{ shop_batch() }}
