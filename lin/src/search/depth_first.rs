//! The search's fallback when the breadth-first frontier grows too large:
//! a depth-first walk from the frontier's configurations that memoises the
//! (event, configuration) pairs it has visited, and the step both walks
//! take at a return: the configurations left once an operation returns.

use super::*;

impl<P: Spec, B: Bits> Search<'_, '_, P, B> {
    /// Depth-first search from `roots` (the configurations at event `at`),
    /// memoising visited (event, configuration) pairs: used when the
    /// breadth-first frontier grows too large.
    pub(super) fn dfs(
        &mut self,
        roots: Vec<Cfg<P::State, B>>,
        ev: &[Event],
        at: usize,
        last_ret: usize,
    ) -> Outcome<P::State> {
        self.enable_reductions(ev);
        let mut stack: Vec<(usize, Cfg<P::State, B>)> =
            roots.into_iter().rev().map(|c| (at, c)).collect();
        let mut seen: Antichain<(u32, P::State), B> = Antichain::new();
        let mut seen_dead: Vec<bool> = Vec::new();
        let mut deepest: Option<(usize, Vec<P::State>)> = None;
        let mut iter = 0u64;
        while let Some((e0, mut cfg)) = stack.pop() {
            iter += 1;
            self.steps += 1;
            if iter & 255 == 0 {
                if let Some(r) = self.over_budget(stack.len() + seen.len()) {
                    return Outcome::GaveUp(r);
                }
            }
            self.goto(ev, e0);
            // Walk forward to the next return this configuration has not placed.
            let mut choice = None;
            while self.pos <= last_ret {
                let e = ev[self.pos];
                if e.kind == 0 {
                    self.apply(e);
                    self.pos += 1;
                    self.place_new_read(&mut cfg, e.op);
                    self.canonicalize(&mut cfg);
                    continue;
                }
                let slot = self.slot_of[e.op as usize];
                if cfg.bits.get(slot) {
                    cfg.bits.clear(slot);
                    self.apply(e);
                    self.pos += 1;
                    continue;
                }
                choice = Some(self.pos);
                break;
            }
            let Some(r) = choice else {
                return Outcome::Ok;
            };
            seen_dead.push(false);
            let key = (r as u32, cfg.state.clone());
            if !seen.insert(
                &key,
                &cfg.bits,
                &self.masks,
                seen_dead.len() as u32 - 1,
                &mut seen_dead,
            ) {
                continue;
            }
            let x = ev[r].op;
            let slot = self.slot_of[x as usize];
            let state = cfg.state.clone();
            self.closing = r;
            let next = match self.close(std::slice::from_ref(&cfg), slot, usize::MAX) {
                Ok(n) => n,
                Err(r) => {
                    return Outcome::GaveUp(r.unwrap_or_else(|| "internal: closure cap".into()))
                }
            };
            if next.is_empty() {
                match &mut deepest {
                    Some((d, states)) if *d == r => {
                        if states.len() < 8 && !states.contains(&state) {
                            states.push(state);
                        }
                    }
                    Some((d, _)) if *d > r => {}
                    _ => deepest = Some((r, vec![state])),
                }
                continue;
            }
            for c in next.into_iter().rev() {
                stack.push((r + 1, c));
            }
        }
        let (r, states) = deepest.unwrap_or((at, Vec::new()));
        Outcome::Fail(Box::new(FailInfo {
            op: ev[r.min(ev.len() - 1)].op as usize,
            states,
            longest: path_vec(&self.best),
            snapshot: None,
            recent: Vec::new(),
            pruned: self.pruned || self.doom_deadline > r,
            version_pruned: self.pruned,
            doom_needers: self.doom_needers_after(r),
            overwritten: false,
            event: r,
        }))
    }

    /// The configurations after operation `x` (in `slot`) returns.
    #[allow(clippy::type_complexity)]
    pub(super) fn close(
        &mut self,
        frontier: &[Cfg<P::State, B>],
        slot: usize,
        cap: usize,
    ) -> Result<Vec<Cfg<P::State, B>>, Option<String>> {
        if let [c] = frontier {
            if c.bits.get(slot) {
                let mut bits = c.bits.clone();
                bits.clear(slot);
                return Ok(vec![Cfg {
                    state: c.state.clone(),
                    bits,
                    path: c.path.clone(),
                }]);
            }
        }
        let mut out: Vec<Cfg<P::State, B>> = Vec::new();
        let mut out_dead: Vec<bool> = Vec::new();
        let mut out_set: Antichain<P::State, B> = Antichain::new();
        let mut queue: Vec<Cfg<P::State, B>> = Vec::new();
        let mut queue_dead: Vec<bool> = Vec::new();
        let mut seen: Antichain<P::State, B> = Antichain::new();
        let m = self.masks.clone();

        let push_out = |c: Cfg<P::State, B>,
                        out: &mut Vec<Cfg<P::State, B>>,
                        out_dead: &mut Vec<bool>,
                        out_set: &mut Antichain<P::State, B>| {
            let mut c = c;
            c.bits.clear(slot);
            out_dead.push(false);
            if out_set.insert(&c.state, &c.bits, &m, out.len() as u32, out_dead) {
                out.push(c);
            } else {
                out_dead.pop();
            }
        };

        for c in frontier {
            let mut c = Cfg {
                state: c.state.clone(),
                bits: c.bits.clone(),
                path: c.path.clone(),
            };
            self.canonicalize(&mut c);
            if c.bits.get(slot) {
                push_out(c, &mut out, &mut out_dead, &mut out_set);
            } else {
                queue_dead.push(false);
                if seen.insert(&c.state, &c.bits, &m, queue.len() as u32, &mut queue_dead) {
                    queue.push(c);
                } else {
                    queue_dead.pop();
                }
            }
        }
        // The states one step leads to (one buffer, not one per step).
        let mut nexts: Vec<P::State> = Vec::new();
        let mut qi = 0;
        while qi < queue.len() {
            if qi & 255 == 255 {
                if let Some(r) = self.over_budget(queue.len() + out.len() + seen.len()) {
                    return Err(Some(r));
                }
                if queue.len() + out.len() > cap {
                    return Err(None);
                }
            }
            if queue_dead[qi] {
                qi += 1;
                continue;
            }
            self.steps += 1;
            let (state, bits, path) = {
                let c = &queue[qi];
                (c.state.clone(), c.bits.clone(), c.path.clone())
            };
            qi += 1;
            let cur_version = if self.versioned {
                self.spec.version_of(&state)
            } else {
                None
            };
            // Blind writes are interchangeable: try one (the first pending).
            // With a value view, unconditional writes of values nobody can
            // observe any more are: try the one that returns first.
            let mut blind_tried = false;
            let dead_write = self.first_dead_write(&bits);
            let old_value = self.vals.as_ref().and_then(|v| (v.values.value_of)(&state));
            for k in 0..self.pending.len() {
                let (s, op) = self.pending[k];
                if bits.get(s) {
                    continue;
                }
                let o = &self.ops[op as usize];
                if o.read_only {
                    continue; // placed by normalize when legal
                }
                if let Some(vals) = &self.vals {
                    let u = &vals.values.uses[op as usize];
                    if Some(op) != dead_write
                        && u.unconditional
                        && u.writes.is_some_and(|w| self.value_dead(w, &bits))
                    {
                        continue;
                    }
                } else if o.blind {
                    if blind_tried {
                        continue;
                    }
                    blind_tried = true;
                }
                self.steps += 1;
                nexts.clear();
                match self.spec.step(&state, o.input, o.output) {
                    Next::Illegal => continue,
                    Next::One(n) => nexts.push(n),
                    Next::Many(v) => nexts.extend(v),
                }
                for ns in nexts.drain(..) {
                    if let (Some(old), Some(vals)) = (old_value, &self.vals) {
                        if (self.limits.prune || self.limits.doom_until > 0)
                            && (vals.values.value_of)(&ns) != Some(old)
                        {
                            let mut nb = bits.clone();
                            nb.set(s);
                            match self.doomed(old, &nb) {
                                Some((d, g))
                                    if self.limits.prune || d <= self.limits.doom_until =>
                                {
                                    self.doom_deadline = self.doom_deadline.max(d);
                                    self.doomed_by[g as usize] = self.closing;
                                    continue;
                                }
                                _ => {}
                            }
                        }
                    }
                    if let Some(cv) = cur_version {
                        if let Some(nv) = self.spec.version_of(&ns) {
                            if nv > cv
                                && !(o.output.is_some() && o.claim == Claim::Produced(nv))
                                && self.produced.binary_search(&nv).is_ok()
                            {
                                continue;
                            }
                        }
                    }
                    let mut nb = bits.clone();
                    nb.set(s);
                    let np = self.extend(&path, op, &ns);
                    let mut nc = Cfg {
                        state: ns,
                        bits: nb,
                        path: np,
                    };
                    self.normalize(&mut nc);
                    self.canonicalize(&mut nc);
                    if self.is_dead(&nc) {
                        self.pruned = true;
                        continue;
                    }
                    if nc.bits.get(slot) {
                        push_out(nc, &mut out, &mut out_dead, &mut out_set);
                    } else {
                        queue_dead.push(false);
                        if seen.insert(&nc.state, &nc.bits, &m, queue.len() as u32, &mut queue_dead)
                        {
                            queue.push(nc);
                        } else {
                            queue_dead.pop();
                        }
                    }
                }
            }
        }
        Ok(out
            .into_iter()
            .zip(out_dead)
            .filter(|(_, d)| !d)
            .map(|(c, _)| c)
            .collect())
    }
}
