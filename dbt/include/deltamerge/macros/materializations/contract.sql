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
