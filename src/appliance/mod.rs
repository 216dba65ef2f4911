//! Small pieces of the container appliance that the image cannot take from a shell (it has
//! none): the `healthcheck` client of the operations endpoint, and the `relay` that publishes
//! the MCP port while the server itself sits on an internal network without outside access.
//! Neither touches executions or settings.

pub mod posture;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Where to reach a listener bound to `addr` from the same machine: an unspecified address
/// (`0.0.0.0`, `::`) is reached over loopback.
pub fn local_address(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), addr.port())
        }
        _ => addr,
    }
}

/// Why the server is not healthy.
#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("GET {url} failed: {0}", url = .1)]
    Request(reqwest::Error, String),
    #[error("GET {url} answered {status}: {body}")]
    NotReady {
        url: String,
        status: u16,
        body: String,
    },
}

/// `GET /readyz` on the operations endpoint bound to `ops_listen`; `Ok(body)` on 200.
pub async fn healthcheck(ops_listen: SocketAddr, timeout: Duration) -> Result<String, HealthError> {
    let url = format!("http://{}/readyz", local_address(ops_listen));
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .no_proxy()
        .build()
        .map_err(|e| HealthError::Request(e, url.clone()))?;
    let response = client
        .get(&url)
        .send()
        .await
        .map_err(|e| HealthError::Request(e, url.clone()))?;
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    if status == 200 {
        Ok(body)
    } else {
        Err(HealthError::NotReady {
            url,
            status,
            body: body.chars().take(500).collect(),
        })
    }
}

/// Connections the relay carries at once; further ones wait to be accepted.
const MAX_RELAYED: usize = 256;
/// How long connecting to the target may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Forwards every TCP connection accepted on `listener` to `target` (`host:port`, resolved
/// per connection so a restarted server is found again) until `shutdown`.
pub async fn relay(listener: TcpListener, target: String, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_RELAYED));
    let target: Arc<str> = target.into();
    loop {
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit.expect("never closed"),
            _ = shutdown.cancelled() => return,
        };
        let (mut inbound, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("relay: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => return,
        };
        let target = target.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let outbound =
                tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&*target)).await;
            let mut outbound = match outbound {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    tracing::warn!(%peer, "relay: cannot reach {target}: {e}");
                    return;
                }
                Err(_) => {
                    tracing::warn!(%peer, "relay: {target} did not answer in time");
                    return;
                }
            };
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                _ = shutdown.cancelled() => {}
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn unspecified_addresses_are_reached_over_loopback() {
        let a: SocketAddr = "0.0.0.0:9464".parse().unwrap();
        assert_eq!(local_address(a), "127.0.0.1:9464".parse().unwrap());
        let a: SocketAddr = "[::]:9464".parse().unwrap();
        assert_eq!(local_address(a), "[::1]:9464".parse().unwrap());
        let a: SocketAddr = "10.1.2.3:9464".parse().unwrap();
        assert_eq!(local_address(a), a);
    }

    #[tokio::test]
    async fn relay_carries_bytes_both_ways() {
        // A real echo server behind the relay.
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let echo_addr = echo.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front_addr = front.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(relay(front, echo_addr.to_string(), shutdown.clone()));
        for word in ["first", "second"] {
            let mut c = TcpStream::connect(front_addr).await.unwrap();
            c.write_all(word.as_bytes()).await.unwrap();
            let mut got = vec![0u8; word.len()];
            c.read_exact(&mut got).await.unwrap();
            assert_eq!(got, word.as_bytes());
        }
        shutdown.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn healthcheck_needs_a_200() {
        // A real HTTP listener answering 503, then 200.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for status in ["503 Service Unavailable", "200 OK"] {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = vec![0u8; 4096];
                let _ = s.read(&mut buf).await.unwrap();
                let body = r#"{"ready":false}"#;
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                s.write_all(reply.as_bytes()).await.unwrap();
            }
        });
        let err = healthcheck(addr, Duration::from_secs(5)).await.unwrap_err();
        assert!(err.to_string().contains("503"), "{err}");
        assert!(healthcheck(addr, Duration::from_secs(5)).await.is_ok());
        // Nothing listening: an error, not a hang.
        let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closed_addr = closed.local_addr().unwrap();
        drop(closed);
        assert!(
            healthcheck(closed_addr, Duration::from_secs(5))
                .await
                .is_err()
        );
    }
}
