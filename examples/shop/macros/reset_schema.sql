{#- The demo's fresh start: the schema's catalog entries and its tables' folders go. -#}
{% macro reset_schema() %}
  {% do adapter.drop_schema(api.Relation.create(schema=target.schema)) %}
{% endmacro %}
