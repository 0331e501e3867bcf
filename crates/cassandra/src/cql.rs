//! The keyspace and table the project's load lives in ([`KEYSPACE`], [`TABLE`]: the load
//! generator writes them, the plug-in's observer reads beside them), and whether a node answers
//! CQL: a CQL protocol v4 `OPTIONS` request over a fresh connection, answered by `SUPPORTED`
//! (the cheapest request every server answers once its native transport is up), without a
//! driver session.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The keyspace `load` and `bench` use (and the plug-in's observer reads).
pub const KEYSPACE: &str = "replica_lb";
/// Its table of keys and values.
pub const TABLE: &str = "kv";

/// Request frame header, protocol v4: version, flags, stream 1, opcode OPTIONS (5), no body.
const OPTIONS_FRAME: [u8; 9] = [0x04, 0x00, 0x00, 0x01, 0x05, 0x00, 0x00, 0x00, 0x00];
/// A response to a v4 request starts with version 0x84.
const RESPONSE_V4: u8 = 0x84;
/// The SUPPORTED opcode.
const SUPPORTED: u8 = 0x06;

/// Whether `addr` answers a CQL `OPTIONS` request within `timeout`.
pub fn answers_cql(addr: SocketAddr, timeout: Duration) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, timeout) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(timeout));
    let _ = s.set_write_timeout(Some(timeout));
    if s.write_all(&OPTIONS_FRAME).is_err() {
        return false;
    }
    let mut header = [0u8; 9];
    s.read_exact(&mut header).is_ok() && header[0] == RESPONSE_V4 && header[4] == SUPPORTED
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_server_answering_supported_answers_cql_and_others_do_not() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for reply in [[0x84u8, 0, 0, 1, 0x06, 0, 0, 0, 0], [0x84, 0, 0, 1, 0x00, 0, 0, 0, 0]] {
                let (mut c, _) = l.accept().unwrap();
                let mut req = [0u8; 9];
                c.read_exact(&mut req).unwrap();
                assert_eq!(req, OPTIONS_FRAME);
                c.write_all(&reply).unwrap();
            }
        });
        assert!(answers_cql(addr, Duration::from_secs(2)));
        assert!(!answers_cql(addr, Duration::from_secs(2)), "an ERROR is not SUPPORTED");
        server.join().unwrap();
        let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        assert!(!answers_cql(closed, Duration::from_millis(200)));
    }
}
