{#- Delta tables are written by the engine (adapter.delta_materialize); parquet stays dbt-spark's. -#}
{% materialization table, adapter='deltamerge', supported_languages=['sql', 'python'] %}
  {#- Every config key is read first: a wrong value fails the model before anything runs. -#}
  {%- set file_format = adapter.delta_file_format(this, model.config, 'table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set target_relation = this.incorporate(type='table', is_delta=(file_format == 'delta')) -%}

  {#- A dry run (var deltamerge_dry_run) of a Delta model writes nothing: no hooks, no drop. -#}
  {%- set dry_run = file_format == 'delta' and adapter.delta_dry_run(var('deltamerge_dry_run', false)) -%}

  {% if not dry_run %}{{ run_hooks(pre_hooks) }}{% endif %}

  {%- if not dry_run and existing_relation is not none and not (file_format == 'delta' and existing_relation.is_delta) -%}
    {% do adapter.drop_relation(existing_relation) %}
  {%- endif -%}
  {%- if file_format == 'delta' -%}
    {{ deltamerge_sql_header(model.language) }}
    {%- set contract = deltamerge_contract(compiled_code, target_relation) -%}
    {% set response = adapter.delta_materialize(target_relation, compiled_code, model.config, {
        'materialization': 'table', 'language': model.language, 'dry_run': dry_run, 'contract': contract}) %}
    {% do store_result('main', response=response) %}
  {%- elif model.language == 'python' -%}
    {{ exceptions.raise_compiler_error(
        "Model '" ~ model.name ~ "': Python models are written as Delta tables by dbt-deltamerge "
        ~ "(got file_format '" ~ file_format ~ "'); remove file_format or set it to 'delta'.") }}
  {%- else -%}
    {% call statement('main') -%}
      {{ create_table_as(False, target_relation, compiled_code) }}
    {%- endcall %}
  {%- endif -%}

  {{ return(deltamerge_finish(target_relation, existing_relation, True, dry_run)) }}
{% endmaterialization %}
