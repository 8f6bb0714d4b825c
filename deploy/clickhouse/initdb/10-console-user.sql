-- The SQL console's ClickHouse user (store.console_dsn): it can read the shadow
-- database and nothing else, and cannot write, create, change its readonly
-- setting or reach files, URLs or other servers (no table-function grants).
-- readonly = 2 lets conductor-shadow set the console's limits per query
-- (max_execution_time, max_memory_usage, ...), capped here by MAX.
-- Run once by the clickhouse image on an empty volume, as $CLICKHOUSE_USER.
CREATE SETTINGS PROFILE IF NOT EXISTS shadow_console SETTINGS
    readonly = 2,
    max_execution_time = 10 MAX 60,
    max_memory_usage = 1073741824 MAX 4294967296,
    max_rows_to_read = 1000000000 MAX 10000000000,
    max_result_rows = 100000 MAX 1000000;

CREATE USER IF NOT EXISTS shadow_console
    IDENTIFIED WITH sha256_password BY 'shadow_console'
    SETTINGS PROFILE 'shadow_console';

GRANT SELECT ON shadow.* TO shadow_console;
