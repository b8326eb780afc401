{#- The change data feed of a Delta model, for a downstream model's SQL:
    select * from {{ deltamerge.table_changes(ref('orders'), 3) }}
    Rows carry _change_type, _commit_version and _commit_timestamp. -#}
{% macro table_changes(relation, starting_version, ending_version=none) %}
  {%- if execute -%}
    {{ return(adapter.delta_table_changes(relation, starting_version, ending_version)) }}
  {%- else -%}
    {{ return(relation) }}
  {%- endif -%}
{% endmacro %}
