//! Two sections' sessions over an in-memory pipe: local updates cross
//! both ways and are acknowledged, and a peer that starts is taught the
//! whole table, past one round's worth of updates.

use super::*;
use crate::sample::stick::Counter;
use crate::sample::value::Sample;
use crate::state::table::{KeyWords, key};

fn table() -> Arc<Table> {
    let loaded = crate::config::parse_texts(
        &[(
            "t.cfg".into(),
            "global\n    localpeer A\npeers p\n    peer A 127.0.0.1:1\n    table t type ip size 1k expire 60s store gpc0,http_req_rate(10s)\n".into(),
        )],
        &|_| None,
        &|_: &str, _: u16| Err("no DNS".into()),
    );
    let config = loaded
        .config
        .unwrap_or_else(|| panic!("{:?}", loaded.diagnostics));
    Arc::new(Table::new(config.global.peers[0].tables[0].clone()))
}

fn ip(t: &Table, n: u16) -> KeyWords {
    let [hi, lo] = n.to_be_bytes();
    key::from_sample(
        Sample::Ipv4(std::net::Ipv4Addr::new(10, 0, hi, lo)),
        t.def.key,
    )
    .unwrap()
}

/// Sets gpc0 of `n`'s entry to `v`, a local update.
fn set(t: &Arc<Table>, n: u16, v: u32) {
    let h = t.get_or_create(&ip(t, n)).unwrap();
    for _ in 0..v {
        h.entry().inc_gpc(Counter::Gpc0);
    }
    t.touch(h.entry().slot);
}

fn gpc0(t: &Arc<Table>, n: u16) -> Option<i64> {
    t.with(&ip(t, n), |e| e.counter(Counter::Gpc0)).flatten()
}

/// Waits (bounded) until `ok` holds.
async fn until(what: &str, ok: impl Fn() -> bool) {
    for _ in 0..500 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: never");
}

/// A's and B's sections, one table each, their session running over a
/// pipe (A connected to B).
fn pair(ta: Arc<Table>, tb: Arc<Table>) -> (Arc<Section>, Arc<Section>) {
    let a = Section::for_test("A", &["B"], vec![ta]);
    let b = Section::for_test("B", &["A"], vec![tb]);
    let (x, y) = tokio::io::duplex(1 << 16);
    for (sec, io) in [(a.clone(), x), (b.clone(), y)] {
        tokio::spawn(async move {
            let peer = sec.peers[0].clone();
            let io: Box<dyn Io> = Box::new(io);
            run(&sec, &peer, BufReader::new(io), false, ConnView::default()).await;
        });
    }
    (a, b)
}

#[tokio::test]
async fn local_updates_cross_both_ways_and_are_acknowledged() {
    let (ta, tb) = (table(), table());
    let (a, b) = pair(ta.clone(), tb.clone());
    set(&ta, 1, 3);
    until("B has A's entry", || gpc0(&tb, 1) == Some(3)).await;
    set(&tb, 2, 5);
    until("A has B's entry", || gpc0(&ta, 2) == Some(5)).await;
    // B's entry is A's peer's: A's only local update is its own.
    assert_eq!(ta.local_update(), 1);
    // Each acknowledges the other's updates. (Those taught when the
    // session began count from where the lesson began, as in HAProxy: a
    // new update shows the acknowledgement.)
    set(&ta, 3, 1);
    set(&tb, 4, 1);
    until("both have both", || {
        gpc0(&tb, 3) == Some(1) && gpc0(&ta, 4) == Some(1)
    })
    .await;
    until("A's update acknowledged", || {
        lock(&a.peers[0].state).acked == [ta.local_update()]
    })
    .await;
    until("B's update acknowledged", || {
        lock(&b.peers[0].state).acked == [tb.local_update()]
    })
    .await;
    a.stop();
    b.stop();
}

#[tokio::test]
async fn a_starting_peer_is_taught_the_whole_table() {
    let (ta, tb) = (table(), table());
    // More entries than one round of updates sends.
    for n in 1..=450 {
        set(&ta, n, (n % 7) as u32 + 1);
    }
    let a = Section::for_test("A", &["B"], vec![ta.clone()]);
    // A has the table already: it teaches a whole lesson.
    lock(&a.resync).finished = true;
    let b = Section::for_test("B", &["A"], vec![tb.clone()]);
    let (x, y) = tokio::io::duplex(1 << 16);
    for (sec, io) in [(a.clone(), x), (b.clone(), y)] {
        tokio::spawn(async move {
            let peer = sec.peers[0].clone();
            let io: Box<dyn Io> = Box::new(io);
            run(&sec, &peer, BufReader::new(io), false, ConnView::default()).await;
        });
    }
    until("B learned", || lock(&b.resync).finished).await;
    assert_eq!(tb.used(), 450);
    for n in [1, 199, 200, 201, 450] {
        assert_eq!(gpc0(&tb, n), Some(i64::from(n % 7) + 1), "entry {n}");
    }
    assert!(lock(&b.resync).flags & section::RESYNC_FINISHED != 0);
    // Taught entries are the peer's: B sends none of them back.
    assert_eq!(tb.local_update(), 0);
    a.stop();
    b.stop();
}

#[tokio::test]
async fn a_session_cut_while_learning_gives_the_lesson_back() {
    let a = Section::for_test("A", &["B"], vec![table()]);
    let (x, _other_end) = tokio::io::duplex(1 << 16);
    let sec = a.clone();
    let task = tokio::spawn(async move {
        let peer = sec.peers[0].clone();
        let io: Box<dyn Io> = Box::new(x);
        run(&sec, &peer, BufReader::new(io), false, ConnView::default()).await;
    });
    until("the lesson asked", || {
        let r = lock(&a.resync);
        r.assigned && r.flags & section::RESYNC_PROCESS != 0
    })
    .await;
    // A newer connection of the peer cuts the session.
    task.abort();
    until("the lesson free again", || {
        let r = lock(&a.resync);
        !r.assigned && !r.finished && r.flags & section::RESYNC_ABORT != 0
    })
    .await;
    a.stop();
}
