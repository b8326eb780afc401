{{ config(
    materialized='incremental',
    incremental_strategy='delta_merge',
    unique_key='customer_id',
    sequence_by='event_seq',
    apply_as_deletes="op = 'D'",
    except_column_list=['op', 'event_seq', 'batch'],
) }}
{#- CDC apply, SCD type 1: one row per customer, from its latest event. Batch 2 brings an event
    older than one already applied (customer 1, ignored as late) and one older than customer
    3's delete (ignored: the delete is remembered). -#}
select * from {{ ref('raw_customer_events') }} where batch = {{ shop_batch() }}
