//! `code-executor relay`: publishes the MCP port of a server that sits on an internal network
//! (Docker publishes no port of a container that is only on an internal network), forwarding
//! each TCP connection to it. It reads nothing it forwards.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

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
}
