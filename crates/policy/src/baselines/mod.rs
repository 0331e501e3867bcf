//! The simple baselines of docs/algorithms.md, section 10: [`random`], [`round_robin`],
//! [`least_outstanding`], [`p2c`] (power of d choices on outstanding requests) and
//! [`oracle`] (told the truth; simulation only). Each is the yardstick a smarter policy must
//! beat, so each is kept as cheap and as plain as the field describes it.

pub mod least_outstanding;
pub mod oracle;
pub mod p2c;
pub mod random;
pub mod round_robin;

pub use least_outstanding::LeastOutstanding;
pub use oracle::Oracle;
pub use p2c::P2c;
pub use random::Random;
pub use round_robin::RoundRobin;
