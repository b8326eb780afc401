{#- The common end of our materializations: grants, docs, post-hooks, the relations built
    (a dry run wrote nothing, and its end writes nothing either). -#}
{% macro deltamerge_finish(target_relation, existing_relation, full_refresh, dry_run=false) %}
  {% if not dry_run %}
    {% do apply_grants(target_relation, config.get('grants'), should_revoke(existing_relation, full_refresh)) %}
    {% do persist_docs(target_relation, model) %}
    {{ run_hooks(post_hooks) }}
  {% endif %}
  {{ return({'relations': [target_relation]}) }}
{% endmacro %}
