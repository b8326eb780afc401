{#- Our own materialization: dbt-spark's rejects strategies it does not know. Strategy
    choice and config validation happen in the adapter (WriteSpec), not here. -#}
{% materialization incremental, adapter='deltamerge', supported_languages=['sql', 'python'] %}
  {#- Every config key is read first: a wrong value fails the model before anything runs. -#}
  {%- set file_format = adapter.delta_file_format(this, model.config, 'incremental') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set target_relation = this.incorporate(type='table', is_delta=(file_format == 'delta')) -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set batch = model.get('batch') -%}

  {#- A dry run (var deltamerge_dry_run) of a Delta model writes nothing: no hooks, no drop. -#}
  {%- set dry_run = file_format == 'delta' and adapter.delta_dry_run(var('deltamerge_dry_run', false)) -%}

  {% if not dry_run %}{{ run_hooks(pre_hooks) }}{% endif %}

  {%- if not dry_run and existing_relation is not none and (not existing_relation.is_delta or file_format != 'delta') -%}
    {% do adapter.drop_relation(existing_relation) %}
    {%- set existing_relation = none -%}
  {%- endif -%}
  {%- if file_format == 'delta' -%}
    {{ deltamerge_sql_header(model.language) }}
    {%- set contract = deltamerge_contract(compiled_code, target_relation) -%}
    {% set response = adapter.delta_materialize(target_relation, compiled_code, model.config, {
        'materialization': 'incremental', 'full_refresh': full_refresh,
        'batch_start': batch.event_time_start if batch else none,
        'batch_end': batch.event_time_end if batch else none,
        'language': model.language, 'dry_run': dry_run, 'contract': contract}) %}
    {% do store_result('main', response=response) %}
  {%- else -%}
    {{ exceptions.raise_compiler_error(
        "Model '" ~ model.name ~ "': incremental models need file_format='delta' with dbt-deltamerge "
        ~ "(got '" ~ file_format ~ "'); remove file_format or set it to 'delta'.") }}
  {%- endif -%}

  {{ return(deltamerge_finish(target_relation, existing_relation, full_refresh, dry_run)) }}
{% endmaterialization %}
