//! The SQL strategies' own statements sent raw, on a connection of the bench's own through the same
//! client library the strategy uses (`tokio-postgres`, `mysql_async`), prepared once: the baseline
//! of each SQL row's acquire + release ratio (docs/design.md §8).

use mysql_async::prelude::Queryable;
use tokio::sync::Mutex;

/// The part names of each row's statements sent raw.
pub(crate) const RAW_PG_ADVISORY: &str = "raw advisory stmts";
pub(crate) const RAW_PG_LEASE: &str = "raw lease stmts";
pub(crate) const RAW_MY_GET_LOCK: &str = "raw get_lock stmts";
pub(crate) const RAW_MY_LEASE: &str = "raw my-lease stmts";

/// Which of a server kind's two rows: the session lock or the lease row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Row {
    /// `postgres-advisory`, `mysql-get-lock`.
    SessionLock,
    /// `postgres-lease`, `mysql-lease`.
    LeaseRow,
}

/// One SQL row's take and free statements on the bench's own connection.
pub(crate) enum SqlRaw {
    /// PostgreSQL's, prepared.
    Postgres {
        client: tokio_postgres::Client,
        take: tokio_postgres::Statement,
        free: tokio_postgres::Statement,
        row: Row,
    },
    /// MySQL's (`mysql_async` prepares each statement once per connection and keeps it, as the
    /// strategies' client does).
    Mysql {
        conn: Mutex<mysql_async::Conn>,
        row: Row,
    },
}

impl SqlRaw {
    /// Connects to the PostgreSQL at `url` and prepares `row`'s statements.
    pub(crate) async fn postgres(url: &str, row: Row) -> Result<Self, tokio_postgres::Error> {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        let (take, free) = match row {
            Row::LeaseRow => (
                lockers::postgres::lease::ACQUIRE,
                lockers::postgres::lease::RELEASE,
            ),
            Row::SessionLock => (
                lockers::postgres::advisory::TRY_LOCK,
                lockers::postgres::advisory::UNLOCK,
            ),
        };
        let (take, free) = (client.prepare(take).await?, client.prepare(free).await?);
        Ok(SqlRaw::Postgres {
            client,
            take,
            free,
            row,
        })
    }

    /// Connects to the MySQL at `url` over TCP, as the strategies do.
    pub(crate) async fn mysql(url: &str, row: Row) -> Result<Self, mysql_async::Error> {
        let opts = mysql_async::Opts::from_url(url)?;
        let opts = mysql_async::OptsBuilder::from_opts(opts).prefer_socket(false);
        let conn = mysql_async::Conn::new(opts).await?;
        Ok(SqlRaw::Mysql {
            conn: Mutex::new(conn),
            row,
        })
    }

    /// The part name it is recorded as.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            SqlRaw::Postgres { row, .. } if *row == Row::LeaseRow => RAW_PG_LEASE,
            SqlRaw::Postgres { .. } => RAW_PG_ADVISORY,
            SqlRaw::Mysql { row, .. } if *row == Row::LeaseRow => RAW_MY_LEASE,
            SqlRaw::Mysql { .. } => RAW_MY_GET_LOCK,
        }
    }

    /// Takes the lock and frees it: the row's two statements.
    pub(crate) async fn cycle(&self) {
        match self {
            SqlRaw::Postgres {
                client,
                take,
                free,
                row,
            } => {
                let key = "bench:raw-pg";
                if *row == Row::LeaseRow {
                    let taken = client.query_one(take, &[&key, &"raw", &30.0_f64]).await;
                    let token: i64 = taken.unwrap().get(0);
                    let freed = client.execute(free, &[&key, &token]).await;
                    assert_eq!(freed.unwrap(), 1);
                } else {
                    client.query_one(take, &[&key]).await.unwrap();
                    let freed = client.query_one(free, &[&key]).await.unwrap();
                    assert!(freed.get::<_, bool>(0));
                }
            }
            SqlRaw::Mysql { conn, row } => mysql_cycle(&mut *conn.lock().await, *row).await,
        }
    }
}

/// MySQL's take and free of `row` on `conn`, as the strategies send them.
async fn mysql_cycle(conn: &mut mysql_async::Conn, row: Row) {
    let name = "bench:raw-my";
    if row == Row::LeaseRow {
        let take = (name, "raw", 30_000_000_u64);
        conn.exec_drop(lockers::mysql::lease::ACQUIRE, take)
            .await
            .unwrap();
        let token = conn.last_insert_id().unwrap();
        assert!(conn.affected_rows() > 0, "the lease row was taken");
        conn.exec_drop(lockers::mysql::lease::RELEASE, (name, token))
            .await
            .unwrap();
        assert_eq!(conn.affected_rows(), 1, "the lease row was freed");
    } else {
        conn.exec_drop(lockers::mysql::get_lock::LOCK, (name, name, 0.0_f64))
            .await
            .unwrap();
        assert!(conn.affected_rows() > 0, "the user lock was taken");
        let freed: Option<Option<i64>> = conn
            .exec_first(lockers::mysql::get_lock::UNLOCK, (name,))
            .await
            .unwrap();
        assert_eq!(freed.flatten(), Some(1), "the user lock was freed");
    }
}
