//! ListRuns as one SQL query, built once for both stores: every filter (tenant, status, agent,
//! creation time, pending kind, metadata) and the page are conditions of the query, so paging
//! combines with any of them. Only how JSON is read differs by store ([`Dialect`]).

use super::ops::SqlValue;
use super::records::{RUN_COLUMNS, to_json};
use super::{RunQuery, StoreResult};

/// The SQL a store speaks, where the two differ: how JSON text is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    Sqlite,
    Postgres,
}

/// A run listing as one query: [`RUN_COLUMNS`], then the tenant (PostgreSQL reads the runs'
/// pending calls by it), of the runs `query` selects, newest id first, with its parameters (`$1`,
/// `$2`, ... in order of appearance, as SQLite numbers them). Every filter is a condition of the
/// query, the tenant's too, so paging (`run_id` below the last one listed) combines with any of
/// them.
pub(super) fn list_runs_query(
    query: &RunQuery,
    dialect: Dialect,
) -> StoreResult<(String, Vec<SqlValue>)> {
    let mut sql = format!("SELECT {RUN_COLUMNS}, tenant FROM runs WHERE TRUE");
    let mut params = Vec::new();
    // Appends ` AND template`, each `{}` in it numbered as the next of `values`.
    let mut condition = |sql: &mut String, template: &str, values: Vec<SqlValue>| {
        sql.push_str(" AND ");
        let mut pieces = template.split("{}");
        sql.push_str(pieces.next().unwrap_or_default());
        for (piece, value) in pieces.zip(values) {
            params.push(value);
            sql.push_str(&format!("${}{piece}", params.len()));
        }
    };
    let filter = &query.filter;
    if let Some(tenant) = &query.tenant {
        condition(
            &mut sql,
            "tenant = {}",
            vec![SqlValue::from(tenant.clone())],
        );
    }
    if let Some(status) = filter.status {
        condition(
            &mut sql,
            "status = {}",
            vec![SqlValue::from(status.as_str())],
        );
    }
    if let Some(agent_id) = &filter.agent_id {
        condition(
            &mut sql,
            "agent_id = {}",
            vec![SqlValue::from(agent_id.clone())],
        );
    }
    if let Some(after) = filter.created_after_ms {
        condition(&mut sql, "created_ms >= {}", vec![SqlValue::from(after)]);
    }
    if let Some(before) = filter.created_before_ms {
        condition(&mut sql, "created_ms < {}", vec![SqlValue::from(before)]);
    }
    if let Some(kind) = filter.pending_kind {
        condition(
            &mut sql,
            // The tenant too (a call's is its run's): the pending calls' index starts with it.
            "EXISTS (SELECT 1 FROM tool_calls c WHERE c.tenant = runs.tenant \
             AND c.run_id = runs.run_id AND c.status = 'pending' AND c.suspend_kind = {})",
            vec![SqlValue::from(kind.as_str())],
        );
    }
    if !filter.metadata.is_empty() {
        match dialect {
            // One containment test of the whole map.
            Dialect::Postgres => condition(
                &mut sql,
                "CAST(metadata AS JSONB) @> CAST(CAST({} AS TEXT) AS JSONB)",
                vec![SqlValue::from(to_json(&filter.metadata)?)],
            ),
            // An entry each: the key, then its value.
            Dialect::Sqlite => {
                for (key, value) in &filter.metadata {
                    condition(
                        &mut sql,
                        "EXISTS (SELECT 1 FROM json_each(runs.metadata) m WHERE m.key = {} \
                         AND m.value = {})",
                        vec![SqlValue::from(key.clone()), SqlValue::from(value.clone())],
                    );
                }
            }
        }
    }
    if let Some(before) = &query.before_run_id {
        condition(
            &mut sql,
            "run_id < {}",
            vec![SqlValue::from(before.clone())],
        );
    }
    sql.push_str(&format!(" ORDER BY run_id DESC LIMIT {}", query.limit));
    Ok((sql, params))
}
