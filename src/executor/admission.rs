//! Admission: the execution slots (`max_concurrent_executions`) and the queue
//! (`max_queued_executions`), shared fairly between principals. Each principal may run at most
//! its share of the slots and have at most its share of the queue waiting
//! ([`PrincipalShare`]); beyond that its calls are refused as busy while other principals' still
//! queue. When a slot frees, it goes to a waiting execution of the principal with the fewest
//! running among those under their share, in turn (round-robin) between principals that tie:
//! never to the oldest waiter overall, so a principal that queued many executions first does not
//! keep the others waiting. An execution run as a task holds its slot like any other, so a
//! principal's long tasks count against its share.
//!
//! [`Queue`] is the bookkeeping alone (no clock, no async), tested deterministically;
//! [`Admission`] wakes the waiting executions and gives each admitted one a [`Permit`] that
//! frees its slot when dropped. Nothing here knows what an execution is.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::oneshot;

use crate::config::settings::PrincipalShare;

/// What happened to an execution that asked for a slot.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// It runs now.
    Runs,
    /// It waits, as this ticket.
    Waits(u64),
    /// It is refused: why, for the client.
    Refused(String),
}

/// One principal's executions.
#[derive(Debug)]
struct Principal {
    share: PrincipalShare,
    running: usize,
    waiting: VecDeque<u64>,
}

/// The slots, the queue and who holds them.
#[derive(Debug)]
pub(crate) struct Queue {
    slots: usize,
    max_queued: usize,
    running: usize,
    queued: usize,
    next_ticket: u64,
    /// Principals running or waiting (none kept once they have neither).
    principals: HashMap<String, Principal>,
    /// Principals with executions waiting, in turn: the next slot goes to the first of those
    /// with the fewest running, which then goes to the back.
    turns: VecDeque<String>,
}

impl Queue {
    pub(crate) fn new(slots: usize, max_queued: usize) -> Self {
        Queue {
            slots,
            max_queued,
            running: 0,
            queued: 0,
            next_ticket: 0,
            principals: HashMap::new(),
            turns: VecDeque::new(),
        }
    }

    /// Executions running, and waiting.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.running, self.queued)
    }

    /// An execution of `who` asks for a slot; `share` is what `who` may hold.
    pub(crate) fn arrive(&mut self, who: &str, share: PrincipalShare) -> Arrival {
        let principal = self
            .principals
            .entry(who.to_string())
            .or_insert_with(|| Principal {
                share,
                running: 0,
                waiting: VecDeque::new(),
            });
        principal.share = share;
        // A free slot with nobody it could go to (every waiter is at its own share): it is
        // this execution's, unless its principal already runs its share.
        if self.running < self.slots && principal.running < share.running {
            principal.running += 1;
            self.running += 1;
            return Arrival::Runs;
        }
        let (running, waiting) = (principal.running, principal.waiting.len());
        let refusal = if self.queued >= self.max_queued {
            Some(format!(
                "server busy: {} executions running and {} queued; retry shortly",
                self.running, self.queued
            ))
        } else if waiting >= share.queued && running >= share.running {
            Some(format!(
                "busy: this client already has {running} executions running and {waiting} waiting, as many as one client may (max_concurrent_executions_per_principal, max_queued_executions_per_principal); other clients are served meanwhile; retry when one of yours has ended"
            ))
        } else if waiting >= share.queued {
            Some(format!(
                "server busy: {} executions running, and this client has {waiting} waiting, as many as one client may (max_queued_executions_per_principal); retry shortly",
                self.running
            ))
        } else {
            None
        };
        if let Some(refusal) = refusal {
            self.forget_if_idle(who);
            return Arrival::Refused(refusal);
        }
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        principal.waiting.push_back(ticket);
        if principal.waiting.len() == 1 {
            self.turns.push_back(who.to_string());
        }
        self.queued += 1;
        Arrival::Waits(ticket)
    }

    /// An execution of `who` that ran has ended; returns the waiting executions now admitted
    /// (principal and ticket), each now counted as running.
    pub(crate) fn leave(&mut self, who: &str) -> Vec<(String, u64)> {
        if let Some(principal) = self.principals.get_mut(who)
            && principal.running > 0
        {
            principal.running -= 1;
            self.running -= 1;
        }
        self.forget_if_idle(who);
        let mut admitted = Vec::new();
        while self.running < self.slots {
            // The first in turn of those with the fewest running, among those under their share.
            let next = self
                .turns
                .iter()
                .enumerate()
                .filter_map(|(at, name)| {
                    let p = &self.principals[name];
                    (p.running < p.share.running).then_some((p.running, at))
                })
                .min();
            let Some((_, at)) = next else { break };
            let Some(name) = self.turns.remove(at) else {
                break;
            };
            let principal = self.principals.get_mut(&name).expect("in turn, so known");
            let Some(ticket) = principal.waiting.pop_front() else {
                continue;
            };
            principal.running += 1;
            self.running += 1;
            self.queued -= 1;
            if !principal.waiting.is_empty() {
                self.turns.push_back(name.clone());
            }
            admitted.push((name, ticket));
        }
        admitted
    }

    /// A waiting execution of `who` gives up (cancelled, or out of time). False when it is no
    /// longer waiting: it was admitted, and must [`leave`](Self::leave) like any other.
    pub(crate) fn withdraw(&mut self, who: &str, ticket: u64) -> bool {
        let Some(principal) = self.principals.get_mut(who) else {
            return false;
        };
        let Some(at) = principal.waiting.iter().position(|t| *t == ticket) else {
            return false;
        };
        principal.waiting.remove(at);
        self.queued -= 1;
        if principal.waiting.is_empty() {
            self.turns.retain(|name| name != who);
        }
        self.forget_if_idle(who);
        true
    }

    fn forget_if_idle(&mut self, who: &str) {
        if self
            .principals
            .get(who)
            .is_some_and(|p| p.running == 0 && p.waiting.is_empty())
        {
            self.principals.remove(who);
        }
    }
}

/// The queue and the executions waiting in it.
struct State {
    queue: Queue,
    /// The waiting executions' wake-ups, by ticket: present while the ticket waits.
    wake: HashMap<u64, oneshot::Sender<()>>,
}

/// Execution slots shared fairly between principals.
pub(crate) struct Admission {
    state: Mutex<State>,
    /// Executions waiting for a slot: the gauge `/metrics` serves.
    waiting: Gauge,
}

/// A slot, held by one running execution of one principal; freed when dropped.
pub(crate) struct Permit {
    admission: Arc<Admission>,
    who: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.admission.release(&self.who);
    }
}

/// An execution waiting for a slot; if it gives up (is dropped) before it was admitted, it
/// leaves the queue, or frees the slot it was given meanwhile.
struct Waiting<'a> {
    admission: &'a Arc<Admission>,
    who: &'a str,
    ticket: u64,
    admitted: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.admitted {
            return;
        }
        let mut state = self.admission.lock();
        state.wake.remove(&self.ticket);
        let withdrawn = state.queue.withdraw(self.who, self.ticket);
        drop(state);
        if !withdrawn {
            self.admission.release(self.who);
        }
        self.admission.publish();
    }
}

impl Admission {
    /// `slots` executions at once, `max_queued` waiting; `waiting` counts those waiting.
    pub(crate) fn new(slots: usize, max_queued: usize, waiting: Gauge) -> Arc<Self> {
        Arc::new(Admission {
            state: Mutex::new(State {
                queue: Queue::new(slots, max_queued),
                wake: HashMap::new(),
            }),
            waiting,
        })
    }

    /// Executions running, and waiting.
    pub(crate) fn counts(&self) -> (usize, usize) {
        self.lock().queue.counts()
    }

    /// Waits for a slot for an execution of `who`, whose share is `share`; refuses at once
    /// when `who`'s share of the queue, or the queue, is full.
    pub(crate) async fn admit(
        self: &Arc<Self>,
        who: &str,
        share: PrincipalShare,
    ) -> Result<Permit, String> {
        let (ticket, woken) = {
            let mut state = self.lock();
            match state.queue.arrive(who, share) {
                Arrival::Runs => return Ok(self.permit(who)),
                Arrival::Refused(why) => return Err(why),
                Arrival::Waits(ticket) => {
                    let (wake, woken) = oneshot::channel();
                    state.wake.insert(ticket, wake);
                    (ticket, woken)
                }
            }
        };
        self.publish();
        let mut waiting = Waiting {
            admission: self,
            who,
            ticket,
            admitted: false,
        };
        // The sender goes only with the admission itself: it is always sent first.
        woken
            .await
            .map_err(|_| "server is shutting down".to_string())?;
        waiting.admitted = true;
        Ok(self.permit(who))
    }

    fn permit(self: &Arc<Self>, who: &str) -> Permit {
        Permit {
            admission: self.clone(),
            who: who.to_string(),
        }
    }

    /// A running execution of `who` ended: its slot goes to the next waiting one in turn.
    fn release(&self, who: &str) {
        let mut state = self.lock();
        for (_, ticket) in state.queue.leave(who) {
            if let Some(wake) = state.wake.remove(&ticket) {
                // A waiter gone meanwhile frees the slot itself (see `Waiting`).
                let _ = wake.send(());
            }
        }
        drop(state);
        self.publish();
    }

    fn publish(&self) {
        let (_, queued) = self.counts();
        self.waiting.set(i64::try_from(queued).unwrap_or(i64::MAX));
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARE: PrincipalShare = PrincipalShare {
        running: 2,
        queued: 3,
    };

    fn ran(arrival: Arrival) {
        assert_eq!(arrival, Arrival::Runs);
    }

    fn waits(arrival: Arrival) -> u64 {
        match arrival {
            Arrival::Waits(ticket) => ticket,
            other => panic!("expected to wait, got {other:?}"),
        }
    }

    fn refused(arrival: Arrival) -> String {
        match arrival {
            Arrival::Refused(why) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn names(admitted: Vec<(String, u64)>) -> Vec<String> {
        admitted.into_iter().map(|(who, _)| who).collect()
    }

    #[test]
    fn one_principal_never_holds_every_slot() {
        let mut q = Queue::new(4, 32);
        ran(q.arrive("a", SHARE));
        ran(q.arrive("a", SHARE));
        // A third of a's waits, though two slots are free...
        waits(q.arrive("a", SHARE));
        // ...and they are b's at once.
        ran(q.arrive("b", SHARE));
        ran(q.arrive("b", SHARE));
        assert_eq!(q.counts(), (4, 1));
    }

    #[test]
    fn a_principal_over_its_share_is_refused_while_others_still_queue() {
        let mut q = Queue::new(4, 32);
        for _ in 0..2 {
            ran(q.arrive("a", SHARE));
        }
        for _ in 0..3 {
            waits(q.arrive("a", SHARE));
        }
        let why = refused(q.arrive("a", SHARE));
        assert!(
            why.contains("busy") && why.contains("max_concurrent_executions_per_principal"),
            "{why}"
        );
        ran(q.arrive("b", SHARE));
        ran(q.arrive("b", SHARE));
        waits(q.arrive("b", SHARE));
        assert_eq!(q.counts(), (4, 4));
    }

    #[test]
    fn freed_slots_go_round_robin_between_principals_not_to_the_oldest_waiter() {
        let share = PrincipalShare {
            running: 3,
            queued: 10,
        };
        let mut q = Queue::new(3, 32);
        for _ in 0..3 {
            ran(q.arrive("a", share));
        }
        // a queues five first, then b and c two each.
        for _ in 0..5 {
            waits(q.arrive("a", share));
        }
        for who in ["b", "c", "b", "c"] {
            waits(q.arrive(who, share));
        }
        // a's first slot frees: the fewest running are b and c (none); b came first.
        assert_eq!(names(q.leave("a")), ["b"]);
        assert_eq!(names(q.leave("a")), ["c"]);
        // Each runs one now: a slot goes back to whoever freed it, for the fewest running.
        assert_eq!(names(q.leave("a")), ["a"]);
        assert_eq!(names(q.leave("b")), ["b"]);
        assert_eq!(names(q.leave("c")), ["c"]);
        // b and c have nobody left waiting: a's last ones take the slots they free.
        assert_eq!(names(q.leave("b")), ["a"]);
        assert_eq!(names(q.leave("c")), ["a"]);
        assert_eq!(q.counts(), (3, 2));
    }

    #[test]
    fn principals_that_tie_take_turns() {
        let share = PrincipalShare {
            running: 3,
            queued: 10,
        };
        let mut q = Queue::new(3, 32);
        for _ in 0..3 {
            ran(q.arrive("c", share));
        }
        for who in ["a", "b", "a", "b"] {
            waits(q.arrive(who, share));
        }
        // a and b run none: a's turn first, then b's (fewer running), then a's again (a tie,
        // and a's turn came back before b's).
        assert_eq!(names(q.leave("c")), ["a"]);
        assert_eq!(names(q.leave("c")), ["b"]);
        assert_eq!(names(q.leave("c")), ["a"]);
        // a runs two, b one: b's.
        assert_eq!(names(q.leave("a")), ["b"]);
        assert_eq!(q.counts(), (3, 0));
    }

    #[test]
    fn a_principal_at_its_share_leaves_a_freed_slot_to_the_others() {
        let mut q = Queue::new(3, 32);
        ran(q.arrive("a", SHARE));
        ran(q.arrive("a", SHARE));
        ran(q.arrive("b", SHARE));
        waits(q.arrive("a", SHARE));
        waits(q.arrive("b", SHARE));
        // b's slot frees: b is under its share and a is not, though a waited first.
        assert_eq!(names(q.leave("b")), ["b"]);
        // Nobody under its share waits: a slot frees with nobody to take it...
        assert!(q.leave("b").is_empty());
        assert_eq!(q.counts(), (2, 1));
        // ...and a newcomer takes it without queueing behind a's waiter.
        ran(q.arrive("c", SHARE));
        assert_eq!(names(q.leave("a")), ["a"]);
        assert_eq!(q.counts(), (3, 0));
    }

    #[test]
    fn the_whole_queue_still_bounds_everyone() {
        let share = PrincipalShare {
            running: 1,
            queued: 2,
        };
        let mut q = Queue::new(1, 3);
        ran(q.arrive("a", share));
        waits(q.arrive("a", share));
        waits(q.arrive("b", share));
        waits(q.arrive("c", share));
        let why = refused(q.arrive("d", share));
        assert!(why.starts_with("server busy"), "{why}");
        assert_eq!(q.counts(), (1, 3));
        // Refused principals leave nothing behind.
        assert!(!q.principals.contains_key("d"));
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_the_queue_and_its_turn() {
        let mut q = Queue::new(1, 8);
        ran(q.arrive("a", SHARE));
        let b = waits(q.arrive("b", SHARE));
        let c = waits(q.arrive("c", SHARE));
        assert!(q.withdraw("b", b));
        assert!(!q.withdraw("b", b));
        assert_eq!(q.counts(), (1, 1));
        assert_eq!(q.leave("a"), [("c".to_string(), c)]);
        // Admitted already: withdrawing is refused, the slot must be left instead.
        assert!(!q.withdraw("c", c));
        assert!(q.leave("c").is_empty());
        assert_eq!(q.counts(), (0, 0));
        assert!(q.principals.is_empty() && q.turns.is_empty());
    }

    #[test]
    fn a_share_of_every_slot_is_first_come_first_served() {
        // The stdio client: one principal with every slot and the whole queue.
        let all = PrincipalShare {
            running: 2,
            queued: 2,
        };
        let mut q = Queue::new(2, 2);
        ran(q.arrive("stdio", all));
        ran(q.arrive("stdio", all));
        let first = waits(q.arrive("stdio", all));
        let second = waits(q.arrive("stdio", all));
        let why = refused(q.arrive("stdio", all));
        assert!(
            why.starts_with("server busy") && !why.contains("principal"),
            "{why}"
        );
        assert_eq!(q.leave("stdio"), [("stdio".to_string(), first)]);
        assert_eq!(q.leave("stdio"), [("stdio".to_string(), second)]);
    }

    #[tokio::test]
    async fn permits_wake_the_next_in_turn_and_a_dropped_waiter_frees_its_slot() {
        let one = PrincipalShare {
            running: 1,
            queued: 4,
        };
        let admission = Admission::new(1, 8, Gauge::default());
        let a = admission.admit("a", one).await.unwrap();
        let waiting_b = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.admit("b", one).await.map(|_| ()) })
        };
        // b is queued (the counts say so) before a's slot frees.
        while admission.counts() != (1, 1) {
            tokio::task::yield_now().await;
        }
        // A waiter dropped while queued leaves no trace.
        let c = admission.admit("c", one);
        let mut c = Box::pin(c);
        assert!(futures::poll!(c.as_mut()).is_pending());
        assert_eq!(admission.counts(), (1, 2));
        drop(c);
        assert_eq!(admission.counts(), (1, 1));
        drop(a);
        waiting_b.await.unwrap().unwrap();
        // b's permit was dropped with its task: everything is free again.
        assert_eq!(admission.counts(), (0, 0));
        // A waiter admitted but dropped before it saw its permit frees the slot.
        let d = admission.admit("d", one).await.unwrap();
        let mut e = Box::pin(admission.admit("e", one));
        assert!(futures::poll!(e.as_mut()).is_pending());
        drop(d);
        assert_eq!(admission.counts(), (1, 0), "e was admitted");
        drop(e);
        assert_eq!(admission.counts(), (0, 0));
    }
}
