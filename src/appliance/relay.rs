//! `code-executor relay`: publishes the MCP port of a server that sits on an internal network
//! (Docker publishes no port of a container that is only on an internal network), forwarding
//! each TCP connection to it. It reads nothing it forwards, and closes a connection as soon as
//! the server closes its side, so a silent client holds a relayed connection no longer than the
//! server lets it (and a client's keep-alive connection ends with the server it was carried to).
//!
//! The target's name is resolved for every connection, so replicas that come and go are found
//! (with `docker compose up --scale executor=3` Docker's DNS answers with every replica's
//! address). Connections take the addresses in turn (round-robin), and when an address refuses
//! or does not answer in time the next one is tried, so a dead replica costs no new connection.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Connections the relay carries at once; further ones wait to be accepted.
const MAX_RELAYED: usize = 256;
/// How long connecting to the target may take, every address tried included.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting to one address of the target may take before the next is tried (a
/// replica on the same network answers in milliseconds; a gone one may not answer at all).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);

/// Forwards every TCP connection accepted on `listener` to `target` (`host:port`, resolved
/// per connection so a restarted server, or a new replica, is found) until `shutdown`.
pub async fn relay(listener: TcpListener, target: String, shutdown: CancellationToken) {
    let target: Arc<str> = target.into();
    let resolve = move || {
        let target = target.clone();
        async move {
            let addresses: Vec<SocketAddr> = tokio::net::lookup_host(&*target).await?.collect();
            Ok::<_, io::Error>((target, addresses))
        }
    };
    relay_resolving(listener, resolve, shutdown).await;
}

/// [`relay`] with the resolution of the target given: `resolve` names the target (for the log)
/// and lists its addresses, anew for each connection.
async fn relay_resolving<R, F>(listener: TcpListener, resolve: R, shutdown: CancellationToken)
where
    R: Fn() -> F + Send + Sync + 'static,
    F: Future<Output = io::Result<(Arc<str>, Vec<SocketAddr>)>> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(MAX_RELAYED));
    let resolve = Arc::new(resolve);
    // Which address the next connection starts with (taken modulo the number of addresses).
    let turns = Arc::new(AtomicUsize::new(0));
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
        let resolve = resolve.clone();
        let turn = turns.fetch_add(1, Ordering::Relaxed);
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let connected = tokio::time::timeout(CONNECT_TIMEOUT, async {
                let (target, addresses) = resolve().await?;
                connect_in_turn(addresses, turn)
                    .await
                    .map_err(|e| io::Error::new(e.kind(), format!("{target}: {e}")))
            })
            .await;
            let mut outbound = match connected {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => {
                    tracing::warn!(%peer, "relay: cannot reach the target: {e}");
                    return;
                }
                Err(_) => {
                    tracing::warn!(%peer, "relay: the target did not answer in time");
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

/// Connects to one of `addresses`, starting with the one whose turn it is and trying the next
/// one when an address refuses or does not answer within [`ATTEMPT_TIMEOUT`]. The addresses are
/// sorted first: the resolver may list them in any order, the turns must still go round them.
async fn connect_in_turn(mut addresses: Vec<SocketAddr>, turn: usize) -> io::Result<TcpStream> {
    addresses.sort();
    addresses.dedup();
    if addresses.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no address"));
    }
    let first = turn % addresses.len();
    let mut failures = Vec::new();
    for address in addresses[first..].iter().chain(&addresses[..first]) {
        match tokio::time::timeout(ATTEMPT_TIMEOUT, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => failures.push(format!("{address}: {e}")),
            Err(_) => failures.push(format!("{address}: no answer in {ATTEMPT_TIMEOUT:?}")),
        }
    }
    Err(io::Error::other(failures.join("; ")))
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

    /// A real target that greets every connection with its `name`, then echoes.
    async fn named_target(ip: &str, name: u8) -> (SocketAddr, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let address = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if s.write_all(&[name]).await.is_err() {
                        return;
                    }
                    let mut buf = vec![0u8; 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        (address, task)
    }

    /// A relay in front of a target that always resolves to `addresses` (as Docker's DNS
    /// answers for a service with several replicas).
    async fn relay_to(addresses: Vec<SocketAddr>) -> (SocketAddr, CancellationToken) {
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front_addr = front.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let resolve = move || {
            let addresses = addresses.clone();
            async move { Ok((Arc::from("executor:8765"), addresses)) }
        };
        tokio::spawn(relay_resolving(front, resolve, shutdown.clone()));
        (front_addr, shutdown)
    }

    /// Which target greets a new connection through the relay at `front`.
    async fn greeting(front: SocketAddr) -> u8 {
        let mut client = TcpStream::connect(front).await.unwrap();
        let mut name = [0u8; 1];
        tokio::time::timeout(Duration::from_secs(10), client.read_exact(&mut name))
            .await
            .expect("the relay carried the connection in time")
            .expect("a target greeted the connection");
        name[0]
    }

    #[tokio::test]
    async fn connections_take_every_address_in_turn() {
        let mut addresses = Vec::new();
        for (ip, name) in [
            ("127.0.0.3", b'c'),
            ("127.0.0.1", b'a'),
            ("127.0.0.2", b'b'),
        ] {
            addresses.push(named_target(ip, name).await.0);
        }
        let (front, shutdown) = relay_to(addresses).await;
        let mut served = std::collections::BTreeMap::new();
        for _ in 0..30 {
            *served.entry(greeting(front).await as char).or_insert(0) += 1;
        }
        assert_eq!(
            served,
            [('a', 10), ('b', 10), ('c', 10)].into(),
            "connections per target"
        );
        shutdown.cancel();
    }

    #[tokio::test]
    async fn an_address_that_refuses_is_passed_over() {
        // A replica that is gone: its address refuses connections.
        let gone = TcpListener::bind("127.0.0.2:0").await.unwrap();
        let gone_addr = gone.local_addr().unwrap();
        drop(gone);
        let (a, _) = named_target("127.0.0.1", b'a').await;
        let (c, _) = named_target("127.0.0.3", b'c').await;
        let (front, shutdown) = relay_to(vec![a, gone_addr, c]).await;
        let mut served = std::collections::BTreeMap::new();
        for _ in 0..12 {
            *served.entry(greeting(front).await as char).or_insert(0) += 1;
        }
        // Every connection is carried (`greeting` panics otherwise), by the live targets only.
        assert_eq!(served.values().sum::<i32>(), 12);
        assert!(served[&'a'] > 0 && served[&'c'] > 0, "served: {served:?}");
        shutdown.cancel();
    }

    #[tokio::test]
    async fn an_address_that_does_not_answer_is_passed_over() {
        // A target whose accept queue is full: the kernel drops further connection attempts
        // without an answer, as for a replica that vanished from the network.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let silent = socket.listen(0).unwrap();
        let silent_addr = silent.local_addr().unwrap();
        let mut queued = Vec::new();
        for _ in 0..16 {
            match tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(silent_addr))
                .await
            {
                Ok(Ok(stream)) => queued.push(stream),
                _ => break,
            }
        }
        assert!(
            tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(silent_addr))
                .await
                .is_err(),
            "the silent target still answers"
        );
        let (b, _) = named_target("127.0.0.2", b'b').await;
        // Sorted, the silent address (127.0.0.1) comes first: the first connection tries it.
        let (front, shutdown) = relay_to(vec![b, silent_addr]).await;
        let started = std::time::Instant::now();
        assert_eq!(greeting(front).await, b'b');
        assert!(
            started.elapsed() >= ATTEMPT_TIMEOUT,
            "the silent address was tried first"
        );
        assert_eq!(greeting(front).await, b'b');
        shutdown.cancel();
        drop((silent, queued));
    }

    #[tokio::test]
    async fn a_kept_alive_connection_ends_with_its_target() {
        // Target `a` dies while a client's connection to it is open (a killed replica: the
        // kernel closes its sockets, and its address refuses from then on).
        let a_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = a_listener.local_addr().unwrap();
        let (b, _) = named_target("127.0.0.2", b'b').await;
        let (front, shutdown) = relay_to(vec![a, b]).await;
        let mut client = TcpStream::connect(front).await.unwrap();
        let (mut on_a, _) = a_listener.accept().await.unwrap();
        on_a.write_all(b"a").await.unwrap();
        let mut got = [0u8; 1];
        client.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"a");
        drop((on_a, a_listener));
        // The client learns at once that its connection is over (it is not left waiting)...
        let mut rest = Vec::new();
        let ended =
            tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut rest)).await;
        assert!(
            matches!(ended, Ok(Ok(0)) | Ok(Err(_))),
            "the connection to the dead target is still open: {ended:?}"
        );
        // ...and its next connections are carried to the live target.
        assert_eq!(greeting(front).await, b'b');
        assert_eq!(greeting(front).await, b'b');
        shutdown.cancel();
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
