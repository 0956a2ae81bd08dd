//! The map served on 127.0.0.1 (`sgtsne view --serve`), for maps too large for one file:
//! the page at `/`, each buffer as raw binary at `/buffer/I` — no base64 to decode, and the
//! browser starts drawing as soon as the buffers are in. Only the loopback address is bound,
//! so nothing outside this machine can reach the data.

use std::io::Cursor;

use tiny_http::{Header, Response, Server};

use super::error::ViewError;
use super::html::write_page;
use super::map::Map;

/// Serves `map` on `127.0.0.1:port` (0: a free port the system picks) until the process
/// ends, calling `on_listening` with the page's URL once requests are taken. Returns only
/// when the server cannot start or stops taking requests.
pub fn serve(map: &Map, port: u16, on_listening: impl FnOnce(&str)) -> Result<(), ViewError> {
    let addr = format!("127.0.0.1:{port}");
    let server = Server::http(&addr).map_err(|e| ViewError::Serve {
        addr: addr.clone(),
        reason: e.to_string(),
    })?;
    let url = match server.server_addr().to_ip() {
        Some(a) => format!("http://{a}/"),
        None => format!("http://{addr}/"),
    };
    let mut page = Vec::new();
    write_page(map, false, &mut page).map_err(|e| ViewError::Serve {
        addr: addr.clone(),
        reason: e.to_string(),
    })?;
    on_listening(&url);
    for request in server.incoming_requests() {
        let (status, content_type, body): (u16, &str, &[u8]) = match request.url() {
            "/" | "/index.html" => (200, "text/html; charset=utf-8", &page),
            path => match path
                .strip_prefix("/buffer/")
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| map.buffers.get(i))
            {
                Some(buffer) => (200, "application/octet-stream", buffer),
                None => (404, "text/plain", b"not found"),
            },
        };
        let mut response = Response::new(
            status.into(),
            Vec::new(),
            Cursor::new(body),
            Some(body.len()),
            None,
        );
        if let Ok(h) = Header::from_bytes("Content-Type", content_type) {
            response.add_header(h);
        }
        // A browser that closed the connection early needs no answer.
        let _ = request.respond(response);
    }
    Ok(())
}
