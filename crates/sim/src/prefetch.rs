//! Cache prefetch hints: the simulator's state is spread over many records (a fleet of clients,
//! thousands of nodes), and the next event's records can be fetched while the current event is
//! handled. A hint never changes a result.

/// The most cache lines one hint covers (a record larger than this is fetched in part).
const MAX_LINES: usize = 16;
/// Bytes per cache line.
const LINE_BYTES: usize = 64;

/// Hints the CPU to fetch the cache lines of `*r` (at most [`MAX_LINES`]).
#[inline(always)]
pub fn lines<T>(r: &T) {
    first_lines(r, MAX_LINES);
}

/// Hints the CPU to fetch the first `max_lines` cache lines of `*r` (fewer if it is smaller;
/// at most [`MAX_LINES`]): for a record whose hot fields come first.
#[inline(always)]
pub fn first_lines<T>(r: &T, max_lines: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = (r as *const T).cast::<i8>();
        let bytes = std::mem::size_of::<T>().clamp(1, max_lines.clamp(1, MAX_LINES) * LINE_BYTES);
        let mut offset = 0;
        while offset < bytes {
            // SAFETY: a prefetch never dereferences; the address is within (or one line past
            // the start of the last line of) the record `r` refers to.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            offset += LINE_BYTES;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (r, max_lines);
}
