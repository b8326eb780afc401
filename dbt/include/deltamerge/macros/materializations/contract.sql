{#- A model's enforced contract: dbt's column check, then the columns and constraints as plain
    values for the engine (NOT NULL and CHECK become Delta's; the others are informational, and
    dbt warns about them from the adapter's CONSTRAINT_SUPPORT). The run file records the Delta
    table definition the write gives, as the equivalent CREATE TABLE statement. -#}
{% macro deltamerge_contract(compiled_code, relation) %}
  {%- set contract_config = config.get('contract') -%}
  {%- if not (contract_config and contract_config.enforced) -%}
    {{ return(none) }}
  {%- endif -%}
  {%- if model.language == 'sql' -%}
    {{ get_assert_columns_equivalent(compiled_code) }}
  {%- endif -%}
  {%- set ddl -%}
create or replace table {{ relation }} {{ get_table_columns_and_constraints() }}
using delta
as {{ get_select_subquery(compiled_code) }}
  {%- endset -%}
  {%- if execute and not var('deltamerge_dry_run', false) -%}{% do write(ddl) %}{%- endif -%}
  {{ return({'columns': model['columns'], 'constraints': model.get('constraints') or []}) }}
{% endmacro %}

{#- A model's sql_header (set_sql_header): statements the model's query needs on its session
    (SET ..., temporary functions), run before it; Spark runs one statement at a time. -#}
{% macro deltamerge_sql_header(language) %}
  {%- set sql_header = config.get('sql_header', none) -%}
  {%- if sql_header is not none and language == 'sql' and execute -%}
    {% do run_query(sql_header) %}
  {%- endif -%}
{% endmacro %}

{#- dbt's contract check reads the query's columns with the header in front; Spark takes one
    statement at a time: the header runs first, on the same session. -#}
{% macro deltamerge__get_empty_subquery_sql(select_sql, select_sql_header=none) %}
  {%- if select_sql_header is not none and execute -%}
    {% do run_query(select_sql_header) %}
  {%- endif -%}
  select * from (
    {{ select_sql }}
  ) as __dbt_sbq
  where false
  limit 0
{% endmacro %}
