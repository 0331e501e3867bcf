//! The line protocol between the load generator and the Java driver's runner
//! (`java/driver-runner`, `Protocol.java`), version [`VERSION`]: one line of UTF-8 text per
//! message, fields separated by one space; byte strings in hex.
//!
//! To the runner (its stdin): `hello 1 NAME=VALUE ...` once, first (the settings: contact
//! points, the policy with its `param.NAME=VALUE`s, seed and hit-rate polling, consistency,
//! time-out, keyspace and table); then
//! `r ID KEY` (read), `w ID KEY VALUE` (write), `p ID KEY,KEY,...` (a multi-key read, one
//! prepared read per key at once), `i ID KEY,KEY,...` (a multi-key read in one `IN` query);
//! `end` when no more requests come.
//!
//! From the runner (its stdout): `ready 1 NAME=VALUE ...` once connected; per request one of
//! `ok ID HOST:PORT` (the coordinator; `-` when unknown), `timeout ID`, `error ID MESSAGE`;
//! after `end`, `stats NAME=COUNT ...` (the policy's counters) and `bye`; `fatal MESSAGE` when
//! it cannot go on. Both test suites check the same lines.

use replica_lb_policy::ConsistencyLevel;
use std::fmt::Write as _;
use std::net::SocketAddr;

/// The protocol version both sides speak.
pub const VERSION: u32 = 1;

/// What `hello` tells the runner.
#[derive(Clone, Debug)]
pub struct Hello<'a> {
    /// The nodes to connect to first.
    pub contact_points: &'a [SocketAddr],
    /// The Java driver's client policy, by the runner's name for it (`default`, or a
    /// registered client policy's).
    pub policy: &'a str,
    /// Its parameters (`param.NAME=VALUE`; each value one word).
    pub params: &'a [(String, String)],
    /// The seed of its random stream.
    pub seed: u64,
    /// How often it reads every node's hit rate, ms (0: never).
    pub hit_rate_poll_ms: u64,
    /// The consistency level of every request.
    pub cl: ConsistencyLevel,
    /// The request time-out, ms (the driver's `basic.request.timeout`).
    pub timeout_ms: u32,
    /// The keyspace and the table of `load`.
    pub keyspace: &'a str,
    /// See `keyspace`.
    pub table: &'a str,
}

/// The `hello` line (with its line break).
pub fn hello(h: &Hello<'_>) -> String {
    let contacts: Vec<String> = h.contact_points.iter().map(|a| a.to_string()).collect();
    let mut line = format!(
        "hello {VERSION} contact_points={} policy={} consistency={} timeout_ms={} keyspace={} table={} seed={} hit_rate_poll_ms={}",
        contacts.join(","),
        h.policy,
        h.cl.as_str().to_uppercase(),
        h.timeout_ms,
        h.keyspace,
        h.table,
        h.seed,
        h.hit_rate_poll_ms
    );
    for (name, value) in h.params {
        let _ = write!(line, " param.{name}={value}");
    }
    line.push('\n');
    line
}

/// The `end` line.
pub const END: &str = "end\n";

fn push_hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// Appends `r ID KEY` (with its line break).
pub fn push_read(out: &mut String, id: u64, key: &[u8]) {
    let _ = write!(out, "r {id} ");
    push_hex(out, key);
    out.push('\n');
}

/// Appends `w ID KEY VALUE`.
pub fn push_write(out: &mut String, id: u64, key: &[u8], value: &[u8]) {
    let _ = write!(out, "w {id} ");
    push_hex(out, key);
    out.push(' ');
    push_hex(out, value);
    out.push('\n');
}

/// Appends `i ID KEYS` (`in`: one `IN` query) or `p ID KEYS` (one read per key at once).
pub fn push_multi<'k>(out: &mut String, id: u64, in_query: bool, keys: impl IntoIterator<Item = &'k [u8]>) {
    let _ = write!(out, "{} {id} ", if in_query { 'i' } else { 'p' });
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_hex(out, k);
    }
    out.push('\n');
}

/// A line from the runner.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `ready VERSION NAME=VALUE ...`: connected, statements prepared.
    Ready {
        /// The protocol version it speaks.
        version: u32,
        /// What it runs (`driver`, `policy`, `local_dc`).
        info: Vec<(String, String)>,
    },
    /// `ok ID HOST:PORT`: answered, by that coordinator (`None`: `-`, not known).
    Ok {
        /// The request.
        id: u64,
        /// The node that coordinated it.
        coordinator: Option<SocketAddr>,
    },
    /// `timeout ID`.
    Timeout {
        /// The request.
        id: u64,
    },
    /// `error ID MESSAGE`.
    Error {
        /// The request.
        id: u64,
        /// What went wrong.
        message: String,
    },
    /// `stats NAME=COUNT ...`: the policy's counters.
    Stats(Vec<(String, u64)>),
    /// `bye`: the last line.
    Bye,
    /// `fatal MESSAGE`: it cannot go on.
    Fatal(String),
}

/// Parses one line from the runner; the error is one line naming it.
pub fn parse_reply(line: &str) -> Result<Reply, String> {
    let bad = |why: &str| {
        let shown: String = line.chars().take(120).collect();
        let more = if shown.len() < line.len() { "..." } else { "" };
        format!("the Java driver's runner sent a malformed line '{shown}{more}': {why}")
    };
    let id = |s: &str| -> Result<u64, String> {
        s.parse::<u64>()
            .map_err(|_| bad(&format!("request id '{s}' is not an unsigned number")))
    };
    let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
    let f: Vec<&str> = if rest.is_empty() { Vec::new() } else { rest.split(' ').collect() };
    let exactly = |n: usize| {
        if f.len() == n {
            Ok(())
        } else {
            Err(bad(&format!("'{verb}' takes {n} field(s), got {}", f.len())))
        }
    };
    match verb {
        "ok" => {
            exactly(2)?;
            let coordinator = match f[1] {
                "-" => None,
                a => Some(
                    a.parse::<SocketAddr>()
                        .map_err(|_| bad(&format!("coordinator '{a}' is not IP:PORT")))?,
                ),
            };
            Ok(Reply::Ok {
                id: id(f[0])?,
                coordinator,
            })
        }
        "timeout" => {
            exactly(1)?;
            Ok(Reply::Timeout { id: id(f[0])? })
        }
        "error" => match rest.split_once(' ') {
            Some((id_text, message)) if !message.is_empty() => Ok(Reply::Error {
                id: id(id_text)?,
                message: message.to_string(),
            }),
            _ => Err(bad("no message")),
        },
        "ready" => {
            let version = f.first().ok_or_else(|| bad("no version"))?;
            let version = version
                .parse::<u32>()
                .map_err(|_| bad(&format!("version '{version}' is not a number")))?;
            let info = f[1..]
                .iter()
                .map(|kv| pair(kv).ok_or_else(|| bad(&format!("'{kv}' is not NAME=VALUE"))))
                .collect::<Result<_, _>>()?;
            Ok(Reply::Ready { version, info })
        }
        "stats" => {
            let mut counters = Vec::with_capacity(f.len());
            for kv in &f {
                let (k, v) = pair(kv).ok_or_else(|| bad(&format!("'{kv}' is not NAME=COUNT")))?;
                let v = v
                    .parse::<u64>()
                    .map_err(|_| bad(&format!("counter {k} '{v}' is not an unsigned number")))?;
                counters.push((k, v));
            }
            Ok(Reply::Stats(counters))
        }
        "bye" => {
            exactly(0)?;
            Ok(Reply::Bye)
        }
        "fatal" if !rest.is_empty() => Ok(Reply::Fatal(rest.to_string())),
        "fatal" => Err(bad("no message")),
        other => Err(bad(&format!("unknown message '{other}'"))),
    }
}

fn pair(kv: &str) -> Option<(String, String)> {
    let (k, v) = kv.split_once('=')?;
    (!k.is_empty()).then(|| (k.to_string(), v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_the_lines_the_runner_parses() {
        let cps: Vec<SocketAddr> = vec!["127.0.1.1:9042".parse().unwrap(), "127.0.1.2:9042".parse().unwrap()];
        let mut h = Hello {
            contact_points: &cps,
            policy: "default",
            params: &[],
            seed: 0,
            hit_rate_poll_ms: 0,
            cl: ConsistencyLevel::Quorum,
            timeout_ms: 2000,
            keyspace: "replica_lb",
            table: "kv",
        };
        // The same line as ProtocolTest.HELLO on the Java side.
        assert_eq!(
            hello(&h),
            "hello 1 contact_points=127.0.1.1:9042,127.0.1.2:9042 policy=default consistency=QUORUM timeout_ms=2000 keyspace=replica_lb table=kv seed=0 hit_rate_poll_ms=0\n"
        );
        let params = [
            ("concurrency_weight".to_string(), "4".to_string()),
            ("mode".to_string(), "fast".to_string()),
        ];
        h.policy = "unified";
        h.params = &params;
        h.seed = u64::MAX;
        h.hit_rate_poll_ms = 500;
        assert!(hello(&h).ends_with(
            " policy=unified consistency=QUORUM timeout_ms=2000 keyspace=replica_lb table=kv seed=18446744073709551615 hit_rate_poll_ms=500 param.concurrency_weight=4 param.mode=fast\n"
        ));
        let mut out = String::new();
        push_read(&mut out, 7, b"42");
        push_write(&mut out, u64::MAX, b"1", &[0x76, 0xff, 0]);
        push_multi(&mut out, 9, false, [&b"1"[..], b"2", b"3"]);
        push_multi(&mut out, 10, true, [&b"1"[..], b"2"]);
        out.push_str(END);
        assert_eq!(out, "r 7 3432\nw 18446744073709551615 31 76ff00\np 9 31,32,33\ni 10 31,32\nend\n");
    }

    #[test]
    fn replies_parse() {
        assert_eq!(
            parse_reply("ok 3 127.0.1.2:9042"),
            Ok(Reply::Ok {
                id: 3,
                coordinator: Some("127.0.1.2:9042".parse().unwrap())
            })
        );
        assert_eq!(
            parse_reply("ok 3 [0:0:0:0:0:0:0:1]:9042"),
            Ok(Reply::Ok {
                id: 3,
                coordinator: Some("[::1]:9042".parse().unwrap())
            })
        );
        assert_eq!(
            parse_reply("ok 18446744073709551615 -"),
            Ok(Reply::Ok {
                id: u64::MAX,
                coordinator: None
            })
        );
        assert_eq!(parse_reply("timeout 4"), Ok(Reply::Timeout { id: 4 }));
        assert_eq!(
            parse_reply("error 5 IllegalStateException: no"),
            Ok(Reply::Error {
                id: 5,
                message: "IllegalStateException: no".into()
            })
        );
        assert_eq!(
            parse_reply("stats picks=10 open=0"),
            Ok(Reply::Stats(vec![("picks".into(), 10), ("open".into(), 0)]))
        );
        assert_eq!(parse_reply("stats"), Ok(Reply::Stats(vec![])));
        assert_eq!(
            parse_reply("ready 1 driver=4.19.4 local_dc=dc1"),
            Ok(Reply::Ready {
                version: 1,
                info: vec![("driver".into(), "4.19.4".into()), ("local_dc".into(), "dc1".into())]
            })
        );
        assert_eq!(parse_reply("bye"), Ok(Reply::Bye));
        assert_eq!(parse_reply("fatal x y"), Ok(Reply::Fatal("x y".into())));
    }

    #[test]
    fn a_malformed_line_is_one_error_naming_it() {
        for (line, says) in [
            ("", "unknown message ''"),
            ("okay 1 -", "unknown message 'okay'"),
            ("ok 1", "'ok' takes 2 field(s), got 1"),
            ("ok 1 2 3", "'ok' takes 2 field(s), got 3"),
            ("ok -1 -", "request id '-1' is not an unsigned number"),
            ("ok 1 localhost:9042", "coordinator 'localhost:9042' is not IP:PORT"),
            ("timeout", "'timeout' takes 1 field(s), got 0"),
            ("timeout x", "request id 'x'"),
            ("error 5", "no message"),
            ("error x boom", "request id 'x'"),
            ("stats picks=ten", "counter picks 'ten'"),
            ("stats picks", "'picks' is not NAME=COUNT"),
            ("ready one", "version 'one'"),
            ("bye now", "'bye' takes 0 field(s), got 1"),
            ("fatal", "no message"),
        ] {
            let e = parse_reply(line).unwrap_err();
            assert!(
                e.starts_with(&format!("the Java driver's runner sent a malformed line '{line}'")),
                "{line}: {e}"
            );
            assert!(e.contains(says), "{line}: {e}");
            assert!(!e.contains('\n'));
        }
        let long = "x".repeat(500);
        assert!(parse_reply(&long).unwrap_err().contains("xxx...'"));
    }
}
