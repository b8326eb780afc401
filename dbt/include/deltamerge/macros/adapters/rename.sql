{#- dbt-spark's rename; a table registered in an Iceberg REST catalog takes the new name there too. -#}
{% macro deltamerge__rename_relation(from_relation, to_relation) -%}
  {{ spark__rename_relation(from_relation, to_relation) }}
  {%- if from_relation.type == 'table' -%}{% do adapter.delta_follow_rename(to_relation) %}{%- endif -%}
{% endmacro %}
