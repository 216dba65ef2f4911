//! Small pieces of the container appliance that the image cannot take from a shell (it has
//! none): `healthcheck` (the client of the operations endpoint), `relay` (publishes the MCP port
//! while the server itself sits on an internal network without outside access) and `posture`
//! (the hardening as seen from inside). None of them touches executions or settings.

mod healthcheck;
pub mod posture;
mod relay;

pub use healthcheck::{HealthError, healthcheck};
pub use relay::relay;
