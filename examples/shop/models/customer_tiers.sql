{{ config(
    materialized='incremental',
    incremental_strategy='delta_merge',
    unique_key='customer_id',
    sequence_by='event_seq',
    apply_as_deletes="op = 'D'",
    except_column_list=['op', 'event_seq', 'batch'],
    stored_as_scd_type=2,
    track_history_column_list=['tier'],
) }}
{#- CDC apply, SCD type 2: every tier a customer had, with __START_AT / __END_AT. A name change
    (customer 2) updates the current version in place; late events are placed in the history. -#}
select * from {{ ref('raw_customer_events') }} where batch = {{ shop_batch() }}
