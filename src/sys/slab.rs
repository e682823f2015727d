//! Room for the futures of connection tasks, apart from the heap.
//!
//! A connection's future is several KB (`http::service::serve_connection`'s,
//! 6.7 KB). Spawned as it is, tokio moves it by value about ten times per
//! task (into the task as it spawns it, over it as it replaces it by its
//! output): on a new connection per request, `memmove` was the first
//! user-space symbol of the profile and 4 % of sluice's CPU. Boxed on the
//! heap, the copies go, but the heap keeps the pages of the boxes that
//! tasks waiting out their keep-alive grace held (a burst of connections
//! that park): idle memory per parked connection rose by about 200 B.
//!
//! So the futures live in blocks of [`SLOTS`] slots mapped for them
//! alone, per thread and per size: taking a slot and giving it back is a
//! bit in a mask; a block whose slots are all free is unmapped (but one
//! such is kept per size, so a steady load does not map and unmap), and
//! what a burst took goes back to the system as the burst ends.
//!
//! A slot is given back on the thread that took it. A future dropped on
//! another thread (a runtime torn down from elsewhere, which sluice never
//! does) is dropped there and its slot is left taken.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};

/// Slots per block: a block of 6.7 KB futures is 14 pages.
const SLOTS: usize = 8;

/// A block with every slot taken.
const FULL: u8 = u8::MAX;

/// The largest alignment a slot can have: blocks are page-aligned.
const PAGE: usize = 4096;

struct Block {
    base: NonNull<u8>,
    /// Bit `n` set: slot `n` is taken.
    taken: u8,
    /// In its size's `partial` list (it has a free slot).
    listed: bool,
}

/// The blocks of one slot size.
struct Size {
    slot: usize,
    blocks: Vec<Option<Block>>,
    /// Indexes in `blocks` of unmapped blocks, for reuse.
    vacant: Vec<u32>,
    /// Indexes of the blocks with a free slot, the last used first.
    partial: Vec<u32>,
    /// Blocks with no slot taken.
    empty: usize,
}

impl Size {
    fn block_len(&self) -> usize {
        (self.slot * SLOTS).div_ceil(PAGE) * PAGE
    }

    fn take(&mut self) -> Option<(u32, u8, NonNull<u8>)> {
        while let Some(&i) = self.partial.last() {
            let Some(block) = self.blocks[i as usize].as_mut() else {
                self.partial.pop();
                continue;
            };
            if block.taken == 0 {
                self.empty -= 1;
            }
            let bit = (!block.taken).trailing_zeros() as u8;
            block.taken |= 1 << bit;
            if block.taken == FULL {
                block.listed = false;
                self.partial.pop();
            }
            // SAFETY: slot `bit` lies inside the block's mapping.
            let at = unsafe { block.base.add(bit as usize * self.slot) };
            return Some((i, bit, at));
        }
        let len = self.block_len();
        // SAFETY: an anonymous private mapping; the result is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = NonNull::new(base.cast::<u8>())?;
        let block = Block {
            base,
            taken: 1,
            listed: true,
        };
        let i = match self.vacant.pop() {
            Some(i) => {
                self.blocks[i as usize] = Some(block);
                i
            }
            None => {
                self.blocks.push(Some(block));
                (self.blocks.len() - 1) as u32
            }
        };
        self.partial.push(i);
        Some((i, 0, base))
    }

    fn give(&mut self, i: u32, bit: u8) {
        let Some(block) = self.blocks.get_mut(i as usize).and_then(Option::as_mut) else {
            return;
        };
        block.taken &= !(1 << bit);
        if !block.listed {
            block.listed = true;
            self.partial.push(i);
        }
        if block.taken == 0 {
            self.empty += 1;
        }
    }

    /// Unmaps the blocks with no slot taken.
    fn trim(&mut self) {
        let len = self.block_len();
        for i in 0..self.blocks.len() {
            if self.empty == 0 {
                return;
            }
            let Some(block) = self.blocks[i].as_ref() else {
                continue;
            };
            if block.taken != 0 {
                continue;
            }
            // SAFETY: the block's mapping, none of whose slots is in use.
            unsafe { libc::munmap(block.base.as_ptr().cast(), len) };
            self.blocks[i] = None;
            self.vacant.push(i as u32);
            self.partial.retain(|&j| j as usize != i);
            self.empty -= 1;
        }
    }
}

impl Drop for Size {
    fn drop(&mut self) {
        let len = self.block_len();
        for block in self.blocks.iter().flatten() {
            // A block a future still uses (dropped later, elsewhere) is
            // left mapped.
            if block.taken == 0 {
                // SAFETY: the block's mapping, none of whose slots is in use.
                unsafe { libc::munmap(block.base.as_ptr().cast(), len) };
            }
        }
    }
}

/// A thread's slab: its blocks, by slot size.
struct Slab {
    /// Tells this thread's slab from any other's, even one of a thread
    /// that has exited (0: not given yet).
    id: u64,
    sizes: Vec<Size>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static SLAB: RefCell<Slab> = const { RefCell::new(Slab { id: 0, sizes: Vec::new() }) };
}

/// Where a slotted future's memory came from.
enum Home {
    /// Slot `bit` of block `block` of size `size` of the slab `owner`.
    Slab {
        owner: u64,
        size: u32,
        block: u32,
        bit: u8,
    },
    /// The heap: no slab could be had (a thread being torn down, a failed
    /// mapping, an alignment larger than a page).
    Heap,
}

/// A future in a slot of this thread's slab (or, failing that, a box).
pub(crate) struct Slotted<F> {
    at: NonNull<F>,
    home: Home,
}

// SAFETY: a `Slotted<F>` owns its `F` as a `Box<F>` would; the slab's
// bookkeeping is only touched by the thread that owns it (`owner`).
unsafe impl<F: Send> Send for Slotted<F> {}

impl<F: Future> Slotted<F> {
    /// Makes the future in a slot: `make` writes it there directly rather
    /// than through a copy on the stack, where the compiler can.
    pub(crate) fn new(make: impl FnOnce() -> F) -> Self {
        let layout = std::alloc::Layout::new::<F>();
        let slot = layout
            .size()
            .max(1)
            .next_multiple_of(layout.align().max(64));
        let placed = if layout.align() <= PAGE {
            SLAB.try_with(|slab| {
                let mut slab = slab.try_borrow_mut().ok()?;
                if slab.id == 0 {
                    slab.id = NEXT_ID.fetch_add(1, Relaxed);
                }
                let owner = slab.id;
                let sizes = &mut slab.sizes;
                let n = match sizes.iter().position(|s| s.slot == slot) {
                    Some(n) => n,
                    None => {
                        sizes.push(Size {
                            slot,
                            blocks: Vec::new(),
                            vacant: Vec::new(),
                            partial: Vec::new(),
                            empty: 0,
                        });
                        sizes.len() - 1
                    }
                };
                let (block, bit, at) = sizes[n].take()?;
                let home = Home::Slab {
                    owner,
                    size: n as u32,
                    block,
                    bit,
                };
                Some((at.cast::<F>(), home))
            })
            .ok()
            .flatten()
        } else {
            None
        };
        match placed {
            Some((at, home)) => {
                // SAFETY: `at` is a free slot, large and aligned enough
                // for an `F`.
                unsafe { at.as_ptr().write(make()) };
                Slotted { at, home }
            }
            None => Slotted {
                at: NonNull::from(Box::leak(Box::new(make()))),
                home: Home::Heap,
            },
        }
    }
}

impl<F: Future> Future for Slotted<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: the future never moves out of its slot (or box) until
        // it is dropped there.
        unsafe { Pin::new_unchecked(&mut *self.at.as_ptr()) }.poll(cx)
    }
}

impl<F> Drop for Slotted<F> {
    fn drop(&mut self) {
        match self.home {
            Home::Heap => {
                // SAFETY: made by `Box::leak` in `new`.
                drop(unsafe { Box::from_raw(self.at.as_ptr()) });
            }
            Home::Slab {
                owner,
                size,
                block,
                bit,
            } => {
                // SAFETY: the slot holds a live `F`, dropped once here.
                unsafe { std::ptr::drop_in_place(self.at.as_ptr()) };
                let _ = SLAB.try_with(|slab| {
                    // Not borrowed: the future's own drop has returned.
                    if let Ok(mut slab) = slab.try_borrow_mut()
                        && slab.id == owner
                        && let Some(s) = slab.sizes.get_mut(size as usize)
                    {
                        s.give(block, bit);
                    }
                });
            }
        }
    }
}

/// Gives the system back the blocks of this thread's slab that no future
/// uses.
pub(crate) fn trim() {
    let _ = SLAB.try_with(|slab| {
        if let Ok(mut slab) = slab.try_borrow_mut() {
            slab.sizes.iter_mut().for_each(Size::trim);
        }
    });
}

/// Spawns a task on the current runtime whose future `make` builds in a
/// slot of the slab of the thread that polls it first: the task itself
/// holds only `make`'s captures and the slot's address.
pub(crate) fn spawn<F, M>(make: M)
where
    M: FnOnce() -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move { Slotted::new(make).await });
}

/// A future boxed on the heap, made in its box: `Box::pin(f())` makes the
/// future on the stack and copies it in (an HTTP/2 stream's pipeline is
/// 6 KB), while writing the call's result into memory allocated before it
/// lets the compiler have the call write there directly.
pub(crate) fn boxed<F>(make: impl FnOnce() -> F) -> std::pin::Pin<Box<F>> {
    let mut room = Box::<F>::new_uninit();
    room.write(make());
    // SAFETY: written just above.
    Box::into_pin(unsafe { room.assume_init() })
}

/// How many blocks this thread has mapped for futures of `F`'s slot size
/// (tests: memory goes back when a burst ends).
#[cfg(test)]
fn mapped_blocks<F>() -> usize {
    let layout = std::alloc::Layout::new::<F>();
    let slot = layout
        .size()
        .max(1)
        .next_multiple_of(layout.align().max(64));
    SLAB.with(|slab| {
        slab.borrow()
            .sizes
            .iter()
            .find(|s| s.slot == slot)
            .map_or(0, |s| s.blocks.iter().flatten().count())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    /// A future of a given size that counts its drops.
    struct Big<const N: usize> {
        pad: [u8; N],
        drops: Arc<AtomicUsize>,
        value: usize,
    }

    impl<const N: usize> Future for Big<N> {
        type Output = usize;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<usize> {
            Poll::Ready(self.value + self.pad[N - 1] as usize)
        }
    }

    impl<const N: usize> Drop for Big<N> {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Relaxed);
        }
    }

    fn big<const N: usize>(value: usize, drops: &Arc<AtomicUsize>) -> Slotted<Big<N>> {
        Slotted::new(|| Big {
            pad: [7; N],
            drops: drops.clone(),
            value,
        })
    }

    fn poll_once<F: Future>(f: &mut Slotted<F>) -> Poll<F::Output> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        Pin::new(f).poll(&mut cx)
    }

    #[test]
    fn each_future_has_a_slot_of_its_own_and_is_dropped_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut all: Vec<_> = (0..50).map(|n| big::<6000>(n, &drops)).collect();
        let addrs: std::collections::HashSet<usize> =
            all.iter().map(|s| s.at.as_ptr() as usize).collect();
        assert_eq!(addrs.len(), 50, "two futures share a slot");
        for (n, f) in all.iter_mut().enumerate() {
            assert_eq!(poll_once(f), Poll::Ready(n + 7));
        }
        // Dropped in an order unlike the taking one: every other first.
        let odd: Vec<_> = (0..all.len()).rev().filter(|n| n % 2 == 1).collect();
        for n in odd {
            drop(all.remove(n));
        }
        assert_eq!(drops.load(Relaxed), 25);
        // Freed slots are taken again, and still hold what was written.
        let mut again: Vec<_> = (100..125).map(|n| big::<6000>(n, &drops)).collect();
        for (n, f) in again.iter_mut().enumerate() {
            assert_eq!(poll_once(f), Poll::Ready(100 + n + 7));
        }
        for (n, f) in all.iter_mut().enumerate() {
            assert_eq!(poll_once(f), Poll::Ready(2 * n + 7));
        }
        drop(all);
        drop(again);
        assert_eq!(drops.load(Relaxed), 75);
    }

    #[test]
    fn a_burst_gives_its_blocks_back_once_trimmed() {
        let drops = Arc::new(AtomicUsize::new(0));
        let burst: Vec<_> = (0..10 * SLOTS).map(|n| big::<5000>(n, &drops)).collect();
        assert_eq!(mapped_blocks::<Big<5000>>(), 10);
        drop(burst);
        // Kept until trimmed: a steady flow reuses them.
        assert_eq!(mapped_blocks::<Big<5000>>(), 10);
        let more: Vec<_> = (0..10 * SLOTS).map(|n| big::<5000>(n, &drops)).collect();
        assert_eq!(mapped_blocks::<Big<5000>>(), 10);
        drop(more);
        trim();
        assert_eq!(mapped_blocks::<Big<5000>>(), 0);
        // A steady flow of one future at a time maps one block.
        for n in 0..100 {
            drop(big::<5000>(n, &drops));
        }
        assert_eq!(mapped_blocks::<Big<5000>>(), 1);
        assert_eq!(drops.load(Relaxed), 20 * SLOTS + 100);
    }

    #[test]
    fn a_future_dropped_on_another_thread_is_dropped_there() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut f = big::<3000>(1, &drops);
        assert_eq!(poll_once(&mut f), Poll::Ready(8));
        std::thread::spawn(move || drop(f)).join().unwrap();
        assert_eq!(drops.load(Relaxed), 1);
        // Its slot stays taken: the block is not unmapped under it.
        assert_eq!(mapped_blocks::<Big<3000>>(), 1);
    }

    #[test]
    fn a_task_runs_in_its_slot() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = rt.block_on(async {
            tokio::spawn(async { Slotted::new(|| async { 41 + 1 }).await })
                .await
                .unwrap()
        });
        assert_eq!(got, 42);
    }

    #[test]
    fn a_boxed_future_runs_and_is_dropped_once() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        let fut = super::boxed(|| Big::<4096> {
            pad: [1; 4096],
            drops: drops.clone(),
            value: 41,
        });
        assert_eq!(rt.block_on(fut), 42);
        assert_eq!(drops.load(Relaxed), 1);
    }
}
