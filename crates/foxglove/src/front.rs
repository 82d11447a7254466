//! The front on the public port: reads each connection's HTTP request head, answers plain `GET`s with the page
//! (and its assets), and hands a WebSocket upgrade, head included, to the SDK's server on loopback, then copies
//! bytes both ways until either side closes. Foxglove's SDK has no hook for plain HTTP requests; this is the
//! smallest piece that lets one port serve both. The client's WebSocket frames are not looked at here: the SDK
//! (tungstenite) parses them, and refuses what is malformed. The SDK's frames to the client go through the client's
//! newest-wins queue ([`outbox`](crate::outbox)), which counts what a slow client misses.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::outbox::{Clients, Limits};
use crate::page;

/// The longest request head accepted (browsers send a few hundred bytes; more is refused with 431).
const MAX_HEAD: usize = 16 * 1024;

/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts connections until the runtime stops.
pub(crate) async fn serve(listener: TcpListener, sdk: SocketAddr, clients: Arc<Clients>, limits: Limits) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                tokio::spawn(connection(stream, peer, sdk, Arc::clone(&clients), limits));
            }
            // Out of file descriptors, or similar: wait a little rather than spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// What the request head asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// A WebSocket upgrade: goes to the SDK.
    WebSocket,
    /// A plain `GET` (or `HEAD`) of this path.
    Get { path: String, head_only: bool },
    /// Anything else, with the status to answer.
    Refuse(u16, &'static str),
}

async fn connection(mut stream: TcpStream, peer: SocketAddr, sdk: SocketAddr, clients: Arc<Clients>, limits: Limits) {
    let _ = stream.set_nodelay(true);
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        Ok(Err(status)) => {
            let _ = respond(&mut stream, status.0, status.1, "text/plain", status.1.as_bytes(), false).await;
            return;
        }
        Err(_) => return,
    };
    match parse(&head) {
        Request::WebSocket => proxy(stream, peer, sdk, head, &clients, limits).await,
        Request::Get { path, head_only } => match page::asset(&path) {
            Some((content_type, body)) => {
                let _ = respond(&mut stream, 200, "OK", content_type, body, head_only).await;
            }
            None => {
                let _ = respond(&mut stream, 404, "Not Found", "text/plain", b"not found", head_only).await;
            }
        },
        Request::Refuse(code, reason) => {
            let _ = respond(&mut stream, code, reason, "text/plain", reason.as_bytes(), false).await;
        }
    }
}

/// Reads up to and including the blank line that ends the head; the bytes after it (a client may send its first
/// WebSocket frame at once) stay in the returned buffer and are passed on with it.
async fn read_head(stream: &mut (impl AsyncReadExt + Unpin)) -> Result<Vec<u8>, (u16, &'static str)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.map_err(|_| (400, "Bad Request"))?;
        if n == 0 {
            return Err((400, "Bad Request"));
        }
        let searched_from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if buf[searched_from..].windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(buf);
        }
        if buf.len() > MAX_HEAD {
            return Err((431, "Request Header Fields Too Large"));
        }
    }
}

pub(crate) fn parse(head: &[u8]) -> Request {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(head.len());
    let Ok(text) = std::str::from_utf8(&head[..end]) else { return Request::Refuse(400, "Bad Request") };
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version)) = (first.next(), first.next(), first.next()) else {
        return Request::Refuse(400, "Bad Request");
    };
    if !version.starts_with("HTTP/1.") || first.next().is_some() {
        return Request::Refuse(400, "Bad Request");
    }
    let upgrade = lines.any(|l| {
        l.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("upgrade") && value.trim().eq_ignore_ascii_case("websocket")
        })
    });
    if upgrade {
        return Request::WebSocket;
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => return Request::Refuse(405, "Method Not Allowed"),
    };
    let path = target.split(['?', '#']).next().unwrap_or("/").to_owned();
    Request::Get { path, head_only }
}

async fn respond(
    stream: &mut TcpStream,
    code: u16,
    reason: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    if !head_only {
        stream.write_all(body).await?;
    }
    stream.shutdown().await
}

/// Hands the connection to the SDK's server: the head already read first, then bytes both ways. The SDK's response
/// head goes to the client as it is; after a `101`, the SDK's frames go through the client's newest-wins queue, so
/// a client that stops reading has its oldest messages dropped (counted) there while the front keeps reading the
/// SDK, whose own queue for the client then never fills.
///
/// The SDK writes each message as it comes, with Nagle's algorithm on (it does not set `TCP_NODELAY` on the
/// sockets it accepts, and we cannot reach them), so a small message written while the previous one is unacked
/// waits for our ACK, which Linux delays (its delayed ACK): a fast pose stream arrived late by much of that delay.
/// Acking at once (`TCP_QUICKACK`, which the kernel clears again on its own, hence before every read) lets it go.
async fn proxy(
    mut client: TcpStream,
    peer: SocketAddr,
    sdk: SocketAddr,
    head: Vec<u8>,
    clients: &Arc<Clients>,
    limits: Limits,
) {
    let Ok(mut upstream) = TcpStream::connect(sdk).await else {
        let _ = respond(&mut client, 503, "Service Unavailable", "text/plain", b"server stopping", false).await;
        return;
    };
    let _ = upstream.set_nodelay(true);
    if upstream.write_all(&head).await.is_err() {
        return;
    }
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_sdk, mut to_sdk) = upstream.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut from_client, &mut to_sdk).await;
        let _ = to_sdk.shutdown().await;
    };
    let down = async {
        let Ok(mut response) = read_head(&mut from_sdk).await else { return };
        let end = response.windows(4).position(|w| w == b"\r\n\r\n").map_or(response.len(), |p| p + 4);
        let upgraded = response.starts_with(b"HTTP/1.1 101 ");
        let after = response.split_off(end);
        if to_client.write_all(&response).await.is_err() {
            return;
        }
        if upgraded {
            let registration = clients.register(peer, limits);
            let outbox = &registration.outbox;
            // TCP_QUICKACK is Linux's; elsewhere delayed ACKs stay as the system sets them.
            let quickack = |_from_sdk: &tokio::net::tcp::OwnedReadHalf| {
                #[cfg(target_os = "linux")]
                let _ = socket2::SockRef::from(_from_sdk.as_ref()).set_tcp_quickack(true);
            };
            // Both run to the end: the SDK closing lets the queue drain to the client first.
            tokio::join!(outbox.fill(&mut from_sdk, after, quickack), outbox.drain(&mut to_client));
        } else if to_client.write_all(&after).await.is_ok() {
            // A refused upgrade: the SDK's answer, as it is.
            let _ = tokio::io::copy(&mut from_sdk, &mut to_client).await;
        }
        let _ = to_client.shutdown().await;
    };
    // Either side closing ends the connection.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, Request};

    #[test]
    fn a_websocket_upgrade_goes_to_the_sdk_whatever_the_header_case() {
        let head = b"GET / HTTP/1.1\r\nHost: x\r\nUPGRADE:  WebSocket \r\nConnection: Upgrade\r\n\r\n";
        assert_eq!(parse(head), Request::WebSocket);
    }

    #[test]
    fn a_plain_get_names_its_path_without_the_query() {
        let head = b"GET /app.js?v=1 HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(parse(head), Request::Get { path: "/app.js".into(), head_only: false });
    }

    #[test]
    fn other_methods_and_malformed_heads_are_refused() {
        assert_eq!(parse(b"POST / HTTP/1.1\r\n\r\n"), Request::Refuse(405, "Method Not Allowed"));
        assert_eq!(parse(b"GET /\r\n\r\n"), Request::Refuse(400, "Bad Request"));
        assert_eq!(parse(b"GET / SPDY/3\r\n\r\n"), Request::Refuse(400, "Bad Request"));
        assert_eq!(parse(b"\xff\xfe / HTTP/1.1\r\n\r\n"), Request::Refuse(400, "Bad Request"));
        assert_eq!(parse(b""), Request::Refuse(400, "Bad Request"));
    }
}
