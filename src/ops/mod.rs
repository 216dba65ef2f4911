//! Operations: what the server records about itself while it runs. `audit` is the audit trail
//! (its record schema and only writer); `metrics` holds the Prometheus metrics, the recent error
//! counts `health` reports and the `/livez` `/readyz` `/metrics` endpoint. Nothing here decides
//! or runs anything, and nothing here records content (code, arguments, results).

pub mod audit;
pub mod metrics;
