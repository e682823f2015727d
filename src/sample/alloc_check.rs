//! Test builds only: evaluating a fetch whose value is a slice of the
//! request allocates nothing (issue 17's "little when used"). The test
//! binary's allocator counts the allocations each thread makes, so that
//! a test can count those of the code it runs, whatever other tests do
//! on other threads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // A const-initialized cell: reading and writing it allocates nothing.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; the
// count is a thread-local cell that allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocations the calling thread makes while `f` runs.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn fetches_of_request_slices_allocate_nothing() {
    let raw = bytes::Bytes::from_static(
        b"GET /a/b.html?x=1&y=22 HTTP/1.1\r\nhost: Example.org\r\ncookie: a=1; b=2\r\nx-list: p, q\r\nuser-agent: t\r\n\r\n",
    );
    let head = crate::wire::h1::Head::parse_request(raw).expect("a request");
    let cx = super::Ctx {
        req: Some(&head),
        frontend: "fe",
        ..Default::default()
    };
    // Fetches (and converters) whose value is a slice of the request.
    let exprs = [
        "path",
        "url",
        "query",
        "method",
        "req.ver",
        "req.hdr(host)",
        "req.hdr(x-list,2)",
        "req.fhdr(x-list)",
        "hdr(user-agent)",
        "req.cook(b)",
        "url_param(y)",
        "req.hdr(host),bytes(0,7)",
        "path,field(2,/)",
        "fe_name",
    ];
    for text in exprs {
        let (expr, _) = super::Expr::parse(text).expect(text);
        // Once before, to count only what an evaluation costs (none of
        // these has a first-time set-up, but a lazily made table would).
        let _ = expr.eval(&cx);
        let mut found = false;
        let n = allocations(|| found = expr.eval(&cx).is_some());
        assert!(found, "{text} found nothing");
        assert_eq!(n, 0, "{text}: {n} allocations");
    }
    // Not vacuous: the counter sees an allocation.
    assert_eq!(allocations(|| drop(std::hint::black_box(vec![1u8]))), 1);
}
