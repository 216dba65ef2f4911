//! `code-executor relay`: publishes the MCP port of a server that sits on an internal network
//! (Docker publishes no port of a container that is only on an internal network), forwarding
//! each TCP connection to it. It reads nothing it forwards, and closes a connection as soon as
//! the server closes its side, so a silent client holds a relayed connection no longer than the
//! server lets it.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
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
                () = carry(&mut inbound, &mut outbound) => {}
                _ = shutdown.cancelled() => {}
            }
        });
    }
}

/// Carries bytes both ways until the target closes its side (or either side fails). A client
/// that half-closes still gets the rest of the answer; a client that never sends anything does
/// not hold the connection once the target has closed it (e.g. the server's header-read
/// timeout), as waiting for both sides to finish would.
async fn carry(inbound: &mut TcpStream, outbound: &mut TcpStream) {
    let (mut from_client, mut to_client) = inbound.split();
    let (mut from_target, mut to_target) = outbound.split();
    let requests = async {
        if tokio::io::copy(&mut from_client, &mut to_target)
            .await
            .is_ok()
        {
            let _ = to_target.shutdown().await;
            // The client is done sending; the answer may still be coming.
            std::future::pending::<()>().await;
        }
    };
    let answers = async {
        let _ = tokio::io::copy(&mut from_target, &mut to_client).await;
        let _ = to_client.shutdown().await;
    };
    tokio::select! {
        () = requests => {}
        () = answers => {}
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

    #[tokio::test]
    async fn silent_clients_do_not_hold_the_relay_once_the_target_closes() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // A real target that counts and closes every connection at once (as the server does
        // with a client that sends no request before its header-read timeout).
        let target = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target_addr = target.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        tokio::spawn({
            let accepted = accepted.clone();
            async move {
                while let Ok((s, _)) = target.accept().await {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    drop(s);
                }
            }
        });
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front_addr = front.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(relay(front, target_addr.to_string(), shutdown.clone()));
        // As many clients as the relay carries at once: they send nothing and never close.
        let mut silent = Vec::new();
        for _ in 0..MAX_RELAYED {
            let mut client = TcpStream::connect(front_addr).await.unwrap();
            let mut buf = [0u8; 16];
            assert_eq!(client.read(&mut buf).await.unwrap_or(0), 0);
            silent.push(client);
        }
        // One more client is still carried to the target: the silent ones hold no place.
        let _extra = TcpStream::connect(front_addr).await.unwrap();
        let reached = tokio::time::timeout(Duration::from_secs(60), async {
            while accepted.load(Ordering::SeqCst) <= MAX_RELAYED {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(
            reached.is_ok(),
            "silent clients hold every place of the relay"
        );
        shutdown.cancel();
        task.await.unwrap();
    }
}
