{#- dbt-spark's listagg drops order_by_clause; Spark 4 can keep it. -#}
{% macro deltamerge__listagg(measure, delimiter_text, order_by_clause, limit_num) -%}
  {{ return(adapter.listagg_sql(measure, delimiter_text, order_by_clause, limit_num)) }}
{%- endmacro %}
