//! `code-executor healthcheck`: the client of the operations endpoint's `/readyz`, for the
//! container's health check (the image has no shell and no curl).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// Where to reach a listener bound to `addr` from the same machine: an unspecified address
/// (`0.0.0.0`, `::`) is reached over loopback.
fn local_address(addr: SocketAddr) -> SocketAddr {
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

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
