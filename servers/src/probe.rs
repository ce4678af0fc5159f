//! Tiny blocking clients for readiness checks, metrics and test set-up: one Redis (RESP)
//! command, one HTTP/1.1 request, one ZooKeeper four-letter word. Each opens a fresh loopback
//! connection, does one exchange and closes it; none is meant for load.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::{Result, ServerError};

fn connect(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

fn invalid(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// Sends one Redis command (each argument a bulk string) and returns the reply as text, the way
/// `redis-cli --raw` prints it: status, integer and bulk replies as their text, a nil reply as
/// the empty string, array elements (flattened) one per line.
///
/// A Redis error reply (`-ERR …`) is [`ServerError::Reply`]; `timeout` bounds the connect and
/// every read and write.
pub fn resp_command(addr: SocketAddr, args: &[&str], timeout: Duration) -> Result<String> {
    resp_command_as(addr, None, args, timeout)
}

/// [`resp_command`] on a connection first authenticated with `AUTH user password` when `auth` is
/// given (for servers with an ACL user). A refused `AUTH` is [`ServerError::Reply`] with the
/// server's text, which never contains the password.
pub fn resp_command_as(
    addr: SocketAddr,
    auth: Option<(&str, &str)>,
    args: &[&str],
    timeout: Duration,
) -> Result<String> {
    resp_commands_as(addr, auth, &[args], timeout)
}

/// [`resp_command_as`] for several commands on one connection (e.g. `READONLY` before a read on a
/// cluster replica); returns the last one's reply, and the first error.
pub fn resp_commands_as(
    addr: SocketAddr,
    auth: Option<(&str, &str)>,
    commands: &[&[&str]],
    timeout: Duration,
) -> Result<String> {
    let mut stream = connect(addr, timeout)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut exchange = |args: &[&str]| -> Result<String> {
        stream.write_all(&encode(args))?;
        let mut lines = Vec::new();
        read_resp(&mut reader, &mut lines).map_err(|e| match e {
            RespError::Io(e) => ServerError::Io(e),
            RespError::Server(message) => ServerError::Reply {
                server: format!("redis at {addr}"),
                message,
            },
        })?;
        Ok(lines.join("\n"))
    };
    if let Some((user, password)) = auth {
        exchange(&["AUTH", user, password])?;
    }
    let mut last = String::new();
    for args in commands {
        last = exchange(args)?;
    }
    Ok(last)
}

fn encode(args: &[&str]) -> Vec<u8> {
    let mut request = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        request.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        request.extend_from_slice(arg.as_bytes());
        request.extend_from_slice(b"\r\n");
    }
    request
}

enum RespError {
    Io(io::Error),
    Server(String),
}

impl From<io::Error> for RespError {
    fn from(e: io::Error) -> Self {
        RespError::Io(e)
    }
}

fn read_line(reader: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    if !line.ends_with(b"\r\n") {
        return Err(invalid("redis reply ended early"));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| invalid("redis reply header is not UTF-8"))
}

fn parse_len(text: &str) -> io::Result<i64> {
    text.parse()
        .map_err(|_| invalid(format!("bad length in redis reply: {text:?}")))
}

fn read_resp(reader: &mut impl BufRead, out: &mut Vec<String>) -> Result<(), RespError> {
    let line = read_line(reader)?;
    let (kind, rest) = line.split_at_checked(1).unwrap_or(("", ""));
    match kind {
        "+" | ":" => out.push(rest.to_owned()),
        "-" => return Err(RespError::Server(rest.to_owned())),
        "$" => {
            let len = parse_len(rest)?;
            if len < 0 {
                out.push(String::new());
            } else {
                let len = usize::try_from(len).map_err(io::Error::other)?;
                let mut data = vec![0; len + 2];
                reader.read_exact(&mut data)?;
                data.truncate(len);
                out.push(String::from_utf8_lossy(&data).into_owned());
            }
        }
        "*" => {
            let count = parse_len(rest)?;
            if count < 0 {
                out.push(String::new());
            }
            for _ in 0..count.max(0) {
                read_resp(reader, out)?;
            }
        }
        _ => return Err(invalid(format!("unexpected redis reply: {line:?}")).into()),
    }
    Ok(())
}

/// An HTTP response: status code and body (chunked transfer encoding already decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code, e.g. 200.
    pub status: u16,
    /// The body, decoded as UTF-8 (lossily).
    pub body: String,
}

/// `GET path` over HTTP/1.1 (`Connection: close`) to `addr`.
pub fn http_get(addr: SocketAddr, path: &str, timeout: Duration) -> Result<HttpResponse> {
    http_request(addr, "GET", path, None, timeout)
}

/// `POST path` with a JSON `body` over HTTP/1.1 (`Connection: close`) to `addr`, e.g. etcd's
/// gRPC gateway (`/v3/kv/range`).
pub fn http_post(
    addr: SocketAddr,
    path: &str,
    body: &str,
    timeout: Duration,
) -> Result<HttpResponse> {
    http_request(addr, "POST", path, Some(body), timeout)
}

fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
    timeout: Duration,
) -> Result<HttpResponse> {
    let mut stream = connect(addr, timeout)?;
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: */*\r\n");
    if let Some(body) = body {
        request.push_str("Content-Type: application/json\r\n");
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    } else {
        request.push_str("\r\n");
    }
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    Ok(parse_http_response(&raw)?)
}

fn parse_http_response(raw: &[u8]) -> io::Result<HttpResponse> {
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| invalid("HTTP response without end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let mut body = &raw[head_end + 4..];
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|status_line| status_line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid(format!("bad HTTP status line in {head:?}")))?;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-length")
            && let Ok(len) = value.parse::<usize>()
        {
            body = &body[..len.min(body.len())];
        }
    }
    let body = if chunked {
        decode_chunked(body)?
    } else {
        body.to_vec()
    };
    Ok(HttpResponse {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn decode_chunked(mut data: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| invalid("truncated chunked body"))?;
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| invalid(format!("bad chunk size {size_text:?}")))?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        let chunk = data.get(..size).ok_or_else(|| invalid("truncated chunk"))?;
        out.extend_from_slice(chunk);
        data = data.get(size + 2..).unwrap_or(&[]);
    }
}

/// Sends a ZooKeeper four-letter word (`srvr`, `mntr`, `stat`, …) and returns everything the
/// server writes before closing the connection. The word must be whitelisted
/// (`4lw.commands.whitelist`).
pub fn four_letter_word(addr: SocketAddr, word: &str, timeout: Duration) -> Result<String> {
    let mut stream = connect(addr, timeout)?;
    stream.write_all(word.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    Ok(String::from_utf8_lossy(&raw).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Result<String, String> {
        let mut reader = BufReader::new(bytes);
        let mut out = Vec::new();
        match read_resp(&mut reader, &mut out) {
            Ok(()) => Ok(out.join("\n")),
            Err(RespError::Server(m)) => Err(m),
            Err(RespError::Io(e)) => Err(format!("io: {e}")),
        }
    }

    #[test]
    fn resp_replies_as_text() {
        assert_eq!(parse(b"+PONG\r\n"), Ok("PONG".into()));
        assert_eq!(parse(b":42\r\n"), Ok("42".into()));
        assert_eq!(parse(b"$5\r\nhe\r\no\r\n"), Ok("he\r\no".into()));
        assert_eq!(parse(b"$-1\r\n"), Ok(String::new()));
        assert_eq!(parse(b"*2\r\n$1\r\na\r\n*1\r\n:7\r\n"), Ok("a\n7".into()));
        assert_eq!(parse(b"-ERR nope\r\n"), Err("ERR nope".into()));
        assert!(parse(b"+trunc").is_err());
    }

    #[test]
    fn http_plain_and_chunked() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbodyEXTRA";
        let r = parse_http_response(plain).expect("plain");
        assert_eq!((r.status, r.body.as_str()), (200, "body"));
        let chunked =
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
        let r = parse_http_response(chunked).expect("chunked");
        assert_eq!((r.status, r.body.as_str()), (404, "abcde"));
        assert!(parse_http_response(b"garbage").is_err());
    }
}
