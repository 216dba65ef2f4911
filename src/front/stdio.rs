//! The MCP stream over stdin and stdout, one JSON-RPC message a line (rmcp's stdio framing),
//! each line checked by [`malformed`] before rmcp reads it: what cannot be served gets its
//! JSON-RPC error on stdout at once (rmcp stays silent about a line that is not JSON, and the
//! client waits), and a warning limited per session ([`Complaints`]). A line longer than
//! [`MAX_LINE_BYTES`] is skipped without being held in memory and answered `-32600`. Nothing
//! here knows what a request asks for.

use std::sync::Arc;

use rmcp::model::ErrorCode;
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use super::complaints::Complaints;
use super::malformed::{self, Answer, Verdict};
use crate::executor::STDIO_SESSION;

/// The longest line read (rmcp's limit for its stdio transport, 16 MiB).
pub(crate) const MAX_LINE_BYTES: usize = DEFAULT_MAX_LINE_LENGTH;

/// The server's side of a line-framed MCP stream: `read` from the client, `write` to it.
pub(crate) struct Lines<R, W> {
    read: BufReader<R>,
    /// The line being read, kept across cancelled reads (rmcp polls `receive` in a `select!`).
    line: Vec<u8>,
    /// Set while the rest of an over-long line is skipped.
    skipping: bool,
    write: Arc<Mutex<W>>,
    complaints: Arc<Complaints>,
}

/// What one bounded line read found.
enum LineRead {
    /// A whole line is in `line`.
    Whole,
    /// A line longer than [`MAX_LINE_BYTES`] was skipped.
    TooLong,
    /// The client closed the stream.
    End,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W, complaints: Arc<Complaints>) -> Self {
        Lines {
            read: BufReader::new(read),
            line: Vec::new(),
            skipping: false,
            write: Arc::new(Mutex::new(write)),
            complaints,
        }
    }

    /// Reads one `\n`-ended line into `line`, never holding more than [`MAX_LINE_BYTES`] of it.
    /// Cancel-safe: bytes are taken from the reader only once copied into `line`.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let available = match self.read.fill_buf().await {
                Ok(available) => available,
                Err(e) => {
                    tracing::error!("front: reading stdin failed: {e}");
                    return LineRead::End;
                }
            };
            if available.is_empty() {
                return LineRead::End;
            }
            let end = available.iter().position(|&b| b == b'\n');
            let taken = end.map_or(available.len(), |at| at + 1);
            if !self.skipping {
                if self.line.len() + taken > MAX_LINE_BYTES {
                    self.skipping = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(&available[..taken]);
                }
            }
            self.read.consume(taken);
            if end.is_some() {
                if std::mem::take(&mut self.skipping) {
                    return LineRead::TooLong;
                }
                return LineRead::Whole;
            }
        }
    }

    /// Writes `answer` to the client. In a task of its own, so that a cancelled `receive`
    /// never leaves half a line on the stream.
    fn answer(&self, answer: &Answer) {
        self.complaints.complain(
            STDIO_SESSION,
            &format!("{} {}", answer.error.code.0, answer.error.message),
        );
        let write = self.write.clone();
        let line = answer.to_json().to_string();
        tokio::spawn(async move {
            if let Err(e) = write_line(&write, line.into_bytes()).await {
                tracing::debug!("front: could not answer an unservable message: {e}");
            }
        });
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    write: &Mutex<W>,
    mut line: Vec<u8>,
) -> std::io::Result<()> {
    line.push(b'\n');
    let mut write = write.lock().await;
    write.write_all(&line).await?;
    write.flush().await
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let line = serde_json::to_vec(&item)?;
            write_line(&write, line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                LineRead::Whole => {}
                LineRead::TooLong => {
                    self.answer(&Answer {
                        id: None,
                        error: rmcp::ErrorData::new(
                            ErrorCode::INVALID_REQUEST,
                            format!(
                                "Invalid Request: a message longer than {MAX_LINE_BYTES} bytes was skipped"
                            ),
                            None,
                        ),
                    });
                    continue;
                }
                LineRead::End => return None,
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match malformed::check(text) {
                Verdict::Serve(message) => return Some(*message),
                Verdict::Answer(answer) => self.answer(&answer),
                Verdict::Drop(why) => self.complaints.complain(STDIO_SESSION, &why),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, duplex};

    /// A stream whose client end writes `input` and then reads what the server answered.
    #[tokio::test]
    async fn every_unservable_line_is_answered_and_the_stream_goes_on() {
        let (client_in, server_in) = duplex(1 << 16);
        let (server_out, client_out) = duplex(1 << 16);
        let mut lines = Lines::new(server_in, server_out, Arc::default());
        let mut client_in = client_in;
        client_in
            .write_all(
                b"{\"x\":Infinity}\n\n[]\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n",
            )
            .await
            .unwrap();
        let served = lines.receive().await.expect("the ping is served");
        assert_eq!(
            serde_json::to_value(&served).unwrap()["method"],
            "ping",
            "{served:?}"
        );
        let mut answers = tokio::io::BufReader::new(client_out).lines();
        let mut codes = Vec::new();
        for _ in 0..2 {
            let line = answers.next_line().await.unwrap().unwrap();
            let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(answer["id"], serde_json::Value::Null, "{line}");
            codes.push(answer["error"]["code"].as_i64().unwrap());
        }
        codes.sort();
        assert_eq!(codes, [-32700, -32600]);
        drop(client_in);
        assert!(lines.receive().await.is_none(), "the end of input ends it");
    }
}
