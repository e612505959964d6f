{{ config(materialized='table') }}
-- Downstream of people_table: skipped when people_table fails.
select region, count(*) as n from {{ ref('people_table') }} group by region
