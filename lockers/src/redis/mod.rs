//! Redis strategies: redis-watchdog, redis-guard-thread and redis-keyspace, over shared connection and script code.
