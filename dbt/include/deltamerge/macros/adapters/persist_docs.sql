{#-
  Descriptions of a Delta table go into its Delta metadata (the table description and the
  column comments), where every Delta reader sees them, and into its catalog entry. dbt-spark's
  macro writes column comments with ALTER TABLE statements, which would change only the
  catalog copy (replaced at every commit), and drops the relation's description.
-#}
{% macro deltamerge__persist_docs(relation, model, for_relation, for_columns) -%}
  {%- if relation.is_delta -%}
    {%- set description = model.description if (for_relation and config.persist_relation_docs() and model.description) else none -%}
    {%- set comments = {} -%}
    {%- if for_columns and config.persist_column_docs() and model.columns -%}
      {#- dbt's own check: a documented column the table lacks is warned about and left out. -#}
      {%- set existing = adapter.get_columns_in_relation(relation) | map(attribute="name") | list -%}
      {%- for name, column in validate_doc_columns(relation, model.columns, existing).items() if column.description -%}
        {%- do comments.update({name: column.description}) -%}
      {%- endfor -%}
    {%- endif -%}
    {%- if description is not none or comments -%}
      {%- do adapter.delta_persist_docs(relation, description, comments) -%}
    {%- endif -%}
  {%- else -%}
    {{ spark__persist_docs(relation, model, for_relation, for_columns) }}
  {%- endif -%}
{%- endmacro %}
