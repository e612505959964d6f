{{ config(
    materialized='incremental',
    incremental_strategy='insert_overwrite',
    partition_by=['region'],
) }}
-- A later run overwrites only the partitions it selects (north), the rest stay as they are.
select id, name, region from {{ ref('people') }}
{% if is_incremental() %}
where region = 'north'
{% endif %}
