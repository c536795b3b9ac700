"""The HTTP transport to `benchmax serve` servers: keep-alive, retries of transient failures, fleet failover, a check
that a rollout stays on the server instance that created it, and rollout migration (stdlib only).

Migration: each rollout keeps a log (how it was created, and every step and tool call with the result the model saw,
a fork child starting from a copy of its parent's). When the rollout's server dies, hangs (no answer, and /health
silent too), restarts, drains away or forgets the rollout, the client creates it again on a live server, replays the
log, and checks every replayed result against the logged one. All equal: the call goes on there, and the caller sees
nothing. A result that differs (a nondeterministic tool), or no live server left: `BenchmaxRolloutLost`.
"""

import copy
import http.client
import json
import os
import random
import select
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlsplit


class BenchmaxError(RuntimeError):
    """A failure talking to a benchmax env server."""


class BenchmaxInfraError(BenchmaxError):
    """The env server could not be reached, restarted, or lost the rollout. Never turned into a reward."""


class BenchmaxRolloutLost(BenchmaxInfraError):
    """A rollout whose server was lost (died, hung, drained, restarted) and that could not be rebuilt elsewhere:
    no live server was left, or a replayed call gave another result than the one the model saw. The trainer adapters
    turn it into their trainer's own failed-sample path; it is never a reward."""


class BenchmaxEnvError(BenchmaxError):
    """The env itself failed (a tool crashed, a reward was not finite) or refused the request."""


TRANSIENT_STATUS = (429, 502, 503, 504)


@dataclass
class Rollout:
    endpoint: str
    rollout_id: str
    token: str
    task_id: str
    system_prompt: str = ""
    #: the env parses replies its own way (core's parseActions); every reply goes to the server's /step anyway
    custom_actions: bool = False
    #: the turn limit the server enforces for this rollout (echoed by the server; None: the server has none)
    max_turns: Optional[int] = None
    #: what rebuilds the rollout on another server (kept by the client; see `RolloutLog`)
    log: Optional["RolloutLog"] = field(default=None, repr=False, compare=False)
    #: how many times this rollout moved to another server
    migrations: int = 0


@dataclass
class RolloutLog:
    """A rollout as a log: the request that created it (path and body), then every step and direct tool call that
    changed its state, with the result the model saw (canonical JSON). A fork child's log starts as a copy of its
    parent's. Replaying it in order on any server of the same env rebuilds the rollout's state."""

    path: str
    body: Dict[str, Any]
    ops: List[Tuple[str, Any, str]] = field(default_factory=list)

    def copy(self) -> "RolloutLog":
        return RolloutLog(self.path, copy.deepcopy(self.body), list(self.ops))


def _canonical(action: str, res: Any) -> str:
    """What a replayed call must give again: a tool call's whole result; a step's observation, reward and done."""
    if action == "step" and isinstance(res, dict):
        res = {"observation": res.get("observation"), "reward": res.get("reward"), "done": res.get("done")}
    return json.dumps(res, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class EndpointHealth:
    """What this process knows of each endpoint, shared by every client in it (a SkyRL run builds one client per
    episode): until when one gets no new rollouts (it refused a connection, hung, or is draining) and until when it
    is taken for gone (refused or hung: calls there fail over at once). A background thread probes a gone one's
    /health once that time is past, and puts it back in rotation when it answers; the rollouts clients left there
    are then freed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.down: Dict[str, float] = {}
        self.dead: Dict[str, float] = {}
        #: why an endpoint was last marked (the error text)
        self.why: Dict[str, str] = {}
        #: rollouts left behind on an endpoint taken for gone (hung, or it refused): freed once it answers again
        self.orphans: Dict[str, List[Tuple[str, str]]] = {}
        self.probing: set = set()
        #: host -> until when its endpoints come after the others for new rollouts (one of its servers was gone)
        self.suspect: Dict[str, float] = {}
        self.prober: Optional[threading.Thread] = None
        self.prober_client: Optional["BenchmaxClient"] = None
        #: the current interval an endpoint taken for gone waits before its next probe
        self.backoff: Dict[str, float] = {}

    def mark(self, endpoint: str, for_s: float, dead: bool, why: str = "") -> None:
        """No new rollouts on `endpoint` for `for_s`; `dead`: taken for gone, for `for_s` doubled at each mark in a
        row (up to 4 s), so a node that stays down is probed less often."""
        with self._lock:
            now = time.monotonic()
            if dead:
                if endpoint in self.dead:
                    for_s = min(4.0, max(for_s, 2 * self.backoff.get(endpoint, for_s)))
                self.backoff[endpoint] = for_s
                self.dead[endpoint] = max(now + for_s, self.dead.get(endpoint, 0.0))
                # its host's other servers share its fate more often than not (a preempted or hung node)
                self.suspect[_host(endpoint)] = now + max(for_s, 5.0)
            self.down[endpoint] = max(now + for_s, self.down.get(endpoint, 0.0))
            if why:
                self.why[endpoint] = why

    def reset(self) -> None:
        """Forget everything (tests that start servers on ports an earlier test's servers had)."""
        with self._lock:
            for table in (self.down, self.dead, self.why, self.orphans, self.suspect, self.backoff):
                table.clear()

    def clear(self, endpoint: str) -> List[Tuple[str, str]]:
        """Forget that `endpoint` was down; the rollouts left there, to free now: [(rollout id, token)]."""
        with self._lock:
            self.down.pop(endpoint, None)
            self.dead.pop(endpoint, None)
            self.backoff.pop(endpoint, None)
            return self.orphans.pop(endpoint, [])

    def claim(self, endpoint: str) -> bool:
        """Whether this caller may probe `endpoint` now (no other thread is)."""
        with self._lock:
            if endpoint in self.probing:
                return False
            self.probing.add(endpoint)
            return True

    def unclaim(self, endpoint: str) -> None:
        with self._lock:
            self.probing.discard(endpoint)

    def watch(self, client: "BenchmaxClient") -> None:
        """Make sure a background thread re-probes endpoints taken for gone, so a node that comes back is in
        rotation again (and the rollouts left there are freed) without any create paying for the probe."""
        with self._lock:
            self.prober_client = client
            if self.prober is not None and self.prober.is_alive():
                return
            self.prober = threading.Thread(target=self._probe_loop, name="benchmax-endpoint-prober", daemon=True)
            self.prober.start()

    def _probe_loop(self) -> None:
        while True:
            time.sleep(0.5)
            with self._lock:
                due = [ep for ep in self.dead if time.monotonic() >= self.dead[ep]]
                client = self.prober_client
                if not self.dead:
                    self.prober = None
                    return
            # in parallel: a hung endpoint's probe takes its whole timeout, and a node has many endpoints
            for ep in due[:64]:
                if client is not None and ep not in self.probing:
                    threading.Thread(target=client.recover, args=(ep,), daemon=True).start()

    def orphan(self, endpoint: str, rollout_id: str, token: str) -> None:
        with self._lock:
            left = self.orphans.setdefault(endpoint, [])
            if len(left) < 100_000:
                left.append((rollout_id, token))

    def is_down(self, endpoint: str) -> bool:
        return time.monotonic() < self.down.get(endpoint, 0.0)

    def is_dead(self, endpoint: str) -> bool:
        return time.monotonic() < self.dead.get(endpoint, 0.0)

    def was_dead(self, endpoint: str) -> bool:
        return endpoint in self.dead

    def is_suspect(self, endpoint: str) -> bool:
        return time.monotonic() < self.suspect.get(_host(endpoint), 0.0)


def _host(endpoint: str) -> str:
    return urlsplit(endpoint).hostname or endpoint


HEALTH = EndpointHealth()


class _NoServer(BenchmaxInfraError):
    """No endpoint could be reached to take a new rollout."""


class _Lost(Exception):
    """The rollout's server is gone for it (unreachable, hung, restarted, forgot it): migrate."""


def _split_endpoints(endpoints: Union[str, Sequence[str], None]) -> List[str]:
    if endpoints is None:
        endpoints = os.environ.get("BENCHMAX_ENDPOINTS") or os.environ.get("BENCHMAX_ENDPOINT") or ""
    if isinstance(endpoints, str):
        endpoints = endpoints.split(",")
    out = [e.strip().rstrip("/") for e in endpoints if e and e.strip()]
    if not out:
        raise BenchmaxError("no env server endpoint: set BENCHMAX_ENDPOINTS=http://host:port[,http://host2:port]")
    for e in out:
        if not e.startswith(("http://", "https://")):
            raise BenchmaxError("endpoint %r must be an http:// or https:// URL" % e)
    return out


class ServerHung(OSError):
    """A request got no answer for `hang_after_s`, and the server's /health did not answer either."""


class _Connection:
    """One keep-alive HTTP connection to an endpoint (used by one request at a time)."""

    def __init__(self, url: str, timeout: float, connect_timeout: float = 5.0):
        parts = urlsplit(url)
        self.secure = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.secure else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        self.conn: Optional[http.client.HTTPConnection] = None

    def request(
        self,
        method: str,
        path: str,
        body: Optional[bytes],
        headers: Dict[str, str],
        hang_after_s: Optional[float] = None,
        alive: Any = None,
    ):
        """(status, body bytes, headers). With `hang_after_s` and `alive` (a probe of the server's /health): each
        time the answer is that late, the probe runs; a silent probe raises ServerHung (a long but healthy call
        goes on waiting, up to `timeout`)."""
        if self.conn is None:
            cls = http.client.HTTPSConnection if self.secure else http.client.HTTPConnection
            self.conn = cls(self.host, self.port, timeout=self.connect_timeout)
            self.conn.connect()  # a black-holed host fails in connect_timeout, not the whole request timeout
            self.conn.sock.settimeout(self.timeout)
        try:
            self.conn.request(method, self.prefix + path, body=body, headers=headers)
            if hang_after_s and alive is not None:
                self._await_answer(hang_after_s, alive)
            res = self.conn.getresponse()
            data = res.read()
            return res.status, data, res.headers
        except Exception:
            self.close()
            raise

    def _await_answer(self, hang_after_s: float, alive: Any) -> None:
        """Wait for the answer in short slices: give up at once when another request found the server gone
        (`alive.gone()`), and probe its /health each `hang_after_s` without an answer."""
        sock = self.conn.sock if self.conn is not None else None
        if sock is None:
            return
        waited = 0.0
        since_probe = 0.0
        while waited < self.timeout:
            pending = getattr(sock, "pending", None)
            if pending is not None and pending():
                return
            wait = min(0.25, hang_after_s, self.timeout - waited)
            ready, _, _ = select.select([sock], [], [], wait)
            if ready:
                return
            waited += wait
            since_probe += wait
            if waited >= self.timeout:
                raise TimeoutError("no answer in %.1f s (timeout_s)" % waited)
            if alive.gone():
                raise ServerHung("no answer in %.1f s, and the server was found gone meanwhile" % waited)
            if since_probe >= hang_after_s:
                since_probe = 0.0
                if not alive():
                    raise ServerHung("no answer in %.1f s, and /health is silent: the server hangs" % waited)

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None



def _new_body(fields: Dict[str, Any], trainer_step: Optional[int] = None, group_id: Optional[str] = None) -> Dict[str, Any]:
    """A create's body: `fields` that are set, and the trainer step and group id under `metadata` (what
    `serve --record` reads)."""
    body = {k: v for k, v in fields.items() if v is not None}
    meta: Dict[str, Any] = {}
    if trainer_step is not None:
        if isinstance(trainer_step, bool) or not isinstance(trainer_step, (int, float)):
            raise TypeError("trainer_step must be a number, got %r" % (trainer_step,))
        meta["trainer_step"] = trainer_step
    if group_id is not None:
        meta["group_id"] = str(group_id)
    if meta:
        body["metadata"] = meta
    return body


class BenchmaxClient:
    """Talks to one or more env servers (a fleet): new rollouts go to a live endpoint, later calls stay on it.

    Transient failures (HTTP 429/502/503/504, a dropped connection) are retried `retries` times with exponential
    backoff; then a BenchmaxInfraError is raised. A rollout whose server is lost (refused, hung, restarted, draining
    away, or it forgot the rollout) migrates to a live server (see the module's docstring); `migrate=False` raises
    BenchmaxInfraError instead. An endpoint that refused a connection, or is draining, gets no new rollouts for
    `down_s` seconds, then is tried again (a restarted server is back in rotation). Counters are in `stats`.
    """

    def __init__(
        self,
        endpoints: Union[str, Sequence[str], None] = None,
        token: Optional[str] = None,
        retries: int = 3,
        backoff_s: float = 0.5,
        timeout_s: float = 120.0,
        *,
        migrate: bool = True,
        hang_after_s: Optional[float] = None,
        connect_timeout_s: float = 5.0,
        down_s: float = 2.0,
        migrate_timeout_s: float = 30.0,
    ):
        self.endpoints = _split_endpoints(endpoints)
        self.token = token if token is not None else os.environ.get("BENCHMAX_TOKEN") or None
        self.retries = max(0, int(retries))
        self.backoff_s = float(backoff_s)
        self.timeout_s = float(timeout_s)
        self.migrate = bool(migrate)
        if hang_after_s is None:
            hang_after_s = float(os.environ.get("BENCHMAX_HANG_AFTER_S") or 10.0)
        #: a call unanswered this long probes the server's /health; a silent one is a hang (0: never probe)
        self.hang_after_s = float(hang_after_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self.down_s = float(down_s)
        self.migrate_timeout_s = float(migrate_timeout_s)
        self._next = random.randrange(len(self.endpoints))
        self._instances: Dict[str, str] = {}
        self.stats = {
            "requests": 0,
            "retries": 0,
            "infra_errors": 0,
            "migrations": 0,
            "replayed_calls": 0,
            "lost_rollouts": 0,
            "migration_s": [],
        }
        self._setup_pool()

    def _setup_pool(self) -> None:
        # idle keep-alive connections per endpoint, shared by threads (SkyRL runs env.step in a thread pool,
        # the cookbook adapter in asyncio.to_thread); a connection is used by one request at a time
        self._idle: Dict[str, List[_Connection]] = {}
        self._lock = threading.Lock()
        self.health = HEALTH

    # -- pickling: configuration only (the cookbook sends builders to rollout workers by pickle) ----------
    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        for k in ("_idle", "_lock", "health"):
            state.pop(k, None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup_pool()

    # -- transport ---------------------------------------------------------------------------------------
    def _acquire(self, endpoint: str) -> _Connection:
        with self._lock:
            idle = self._idle.get(endpoint)
            if idle:
                return idle.pop()
        return _Connection(endpoint, self.timeout_s, self.connect_timeout_s)

    def _put_back(self, endpoint: str, conn: _Connection) -> None:
        if conn.conn is None:
            return
        with self._lock:
            self._idle.setdefault(endpoint, []).append(conn)

    def _mark_down(self, endpoint: str, dead: bool = False, why: str = "") -> None:
        """No new rollouts on `endpoint` for `down_s`; `dead` (refused or hung): no calls at all meanwhile, and a
        background probe puts it back once its /health answers."""
        self.health.mark(endpoint, self.down_s, dead, why)
        if dead:
            self.health.watch(self)
            with self._lock:
                for c in self._idle.pop(endpoint, []):
                    c.close()

    def _is_down(self, endpoint: str) -> bool:
        return self.health.is_down(endpoint)

    def _is_dead(self, endpoint: str) -> bool:
        return self.health.is_dead(endpoint)

    def alive(self, endpoint: str, timeout_s: float = 2.0) -> bool:
        """Whether the endpoint's /health answers at all (healthy or draining) within `timeout_s`."""
        try:
            status = self._request(endpoint, "GET", "/health", probe_s=timeout_s)[0]
        except Exception:
            return False
        return status < 500 or status == 503

    def request(
        self, endpoint: str, method: str, path: str, body: Any = None, headers: Optional[Dict[str, str]] = None, idempotent: bool = True
    ) -> Tuple[int, Any, Optional[str]]:
        """A request of the caller's own on `_request`'s path: (status, json body, instance id). Retries transient
        failures; raises BenchmaxInfraError after them."""
        return self._request(endpoint, method, path, body, headers=headers, idempotent=idempotent)

    def _request(
        self,
        endpoint: str,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: Optional[Dict[str, str]] = None,
        rollout: Optional[Rollout] = None,
        what: Optional[str] = None,
        idempotent: bool = True,
        fail_fast: bool = False,
        watch: bool = False,
        probe_s: Optional[float] = None,
    ) -> Tuple[int, Any, Optional[str]]:
        """The one request path: every request the client makes (creates, calls on a rollout, releases, metadata,
        tasks, group rewards, /health probes) is made here. (status, JSON body, the server's instance id).

        It sends the token (and `rollout`'s token) and JSON, keeps connections alive, and retries transient failures
        (HTTP 429/502/503/504, a refused or dropped connection; a request that may have reached the server only when
        `idempotent`), then raises BenchmaxInfraError. An endpoint that refuses or hangs is marked gone, one that
        drains gets no new rollouts. With `what` (what the request does, for messages) the answer is checked:
        `rollout` no longer held by its server (HTTP 404, or another instance id than at its creation) is lost;
        HTTP 401/403 raise BenchmaxInfraError, any other failure status BenchmaxEnvError.

        `fail_fast`: a call on `rollout` whose endpoint is taken for gone, a refused or broken connection, a hang, a
        draining server, spent retries, or a lost rollout raise `_Lost` at once (the caller moves elsewhere).
        `watch`: an answer `hang_after_s` late probes the server's /health, and a silent one is a hang.
        `probe_s`: the /health probe itself: one attempt on a fresh connection with that timeout, no token, nothing
        marked or counted."""
        h = {"accept": "application/json"}
        if self.token and probe_s is None:
            h["authorization"] = "Bearer " + self.token
        if rollout is not None:
            h["x-rollout-token"] = rollout.token
        if headers:
            h.update(headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode("utf-8")
            h["content-type"] = "application/json"
        if probe_s is not None:
            conn = _Connection(endpoint, probe_s, probe_s)
            try:
                status, data, rh = conn.request(method, path, payload, h)
            finally:
                conn.close()
            return status, _decode(data), _instance(rh)
        if fail_fast and rollout is not None and self._is_dead(endpoint):
            raise _Lost("%s is gone (%s)" % (endpoint, self.health.why.get(endpoint, "")))
        status, parsed, rh = self._attempts(endpoint, method, path, payload, h, idempotent, fail_fast, watch)
        instance = _instance(rh)
        if what is not None:
            self._verdict(endpoint, status, parsed, instance, what, rollout, fail_fast)
        return status, parsed, instance

    def _attempts(
        self, endpoint: str, method: str, path: str, payload: Optional[bytes], h: Dict[str, str],
        idempotent: bool, fail_fast: bool, watch: bool,
    ):
        """`_request`'s sending, with its retries: (status, body, response headers)."""
        last = ""
        alive = _Probe(self, endpoint) if watch and self.hang_after_s > 0 else None
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats["retries"] += 1
                time.sleep(self.backoff_s * (2 ** (attempt - 1)))
            self.stats["requests"] += 1
            try:
                conn = self._acquire(endpoint)
                status, data, rh = conn.request(method, path, payload, h, self.hang_after_s, alive)
                self._put_back(endpoint, conn)
            except (ConnectionRefusedError, ServerHung, TimeoutError) as e:
                last = "%s: %s" % (type(e).__name__, e)
                # past the deadline: gone if its /health is silent too (else only this call was slow)
                self._mark_down(endpoint, not isinstance(e, TimeoutError) or not self.alive(endpoint), last)
                if fail_fast:
                    raise _Lost("%s %s on %s: %s" % (method, path, endpoint, last))
                continue
            except (OSError, http.client.HTTPException) as e:
                # the request may have reached the server: only idempotent requests are sent again
                last = "%s: %s" % (type(e).__name__, e)
                if fail_fast:
                    raise _Lost("%s %s on %s: %s" % (method, path, endpoint, last))
                if idempotent or isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError)):
                    continue
                break
            parsed = _decode(data)
            if _draining(status, parsed, rh):
                # no new rollouts there; its live rollouts stay until it goes away (then they migrate)
                self._mark_down(endpoint)
                if status == 503:
                    if fail_fast:
                        raise _Lost("%s is draining: %s" % (endpoint, _message(parsed)))
                    last = "HTTP 503: %s is draining" % endpoint
                    break
            if status in TRANSIENT_STATUS:
                last = "HTTP %d: %s" % (status, _message(parsed))
                continue
            return status, parsed, rh
        self.stats["infra_errors"] += 1
        why = "env server %s failed on %s %s after %d attempt(s): %s" % (endpoint, method, path, attempt + 1, last)
        raise _Lost(why) if fail_fast else BenchmaxInfraError(why)

    def _verdict(
        self, endpoint: str, status: int, body: Any, instance: Optional[str],
        what: str, rollout: Optional[Rollout], fail_fast: bool,
    ) -> None:
        """`_request`'s check of an answer (see there)."""
        if rollout is not None:
            known = self._instances.get(rollout.rollout_id)
            if status == 404 or (known and instance and instance != known):
                why = "env server %s lost rollout %s (restarted or expired): %s" % (
                    endpoint, rollout.rollout_id, _message(body))
                if fail_fast:
                    raise _Lost(why)
                self.stats["infra_errors"] += 1
                raise BenchmaxInfraError(why)
        if 200 <= status < 300:
            return
        msg = "%s: %s failed (HTTP %d): %s" % (endpoint, what, status, _message(body))
        if status in (401, 403):
            self.stats["infra_errors"] += 1
            raise BenchmaxInfraError(msg + " (check BENCHMAX_TOKEN)")
        raise BenchmaxEnvError(msg)

    # -- API ---------------------------------------------------------------------------------------------
    def _any(self, method: str, path: str, body: Any, what: str) -> Any:
        """A request any server of the fleet can answer (metadata, tasks, group rewards): the next endpoint up,
        failing over at once past one that refuses, hangs or drains."""
        errors = []
        order = self._order()
        for ep in [e for e in order if not self._is_dead(e)] or order:
            try:
                return self._request(ep, method, path, body, what=what, fail_fast=True, watch=True)[1]
            except _Lost as e:
                errors.append(str(e))
        raise BenchmaxInfraError("no env server answered %s: %s" % (what, "; ".join(errors)))

    def metadata(self) -> Dict[str, Any]:
        return self._any("GET", "/metadata", None, "GET /metadata")

    def create_rollout(
        self,
        task_id: Optional[str] = None,
        task: Optional[Dict[str, Any]] = None,
        max_turns: Optional[int] = None,
        trainer_step: Optional[int] = None,
        group_id: Optional[str] = None,
    ) -> Rollout:
        """A rollout on the next live endpoint: the server's task `task_id`, else the inline `task`.

        `max_turns`: the server's episode engine ends the episode (scored, `truncated`) at that many replies.
        `trainer_step` (SkyRL's global step, the cookbook's batch index) and `group_id` tag the rollout in a
        `serve --record` recording (its reward curve by step).
        """
        maxt = int(max_turns) if max_turns is not None else None
        body = _new_body({"taskId": task_id, "task": task, "maxTurns": maxt}, trainer_step, group_id)
        return self._open("/v1/rollouts", body, "creating a rollout", task_id)[0]

    def reset(
        self, task_id: Optional[str] = None, task: Optional[Dict[str, Any]] = None, **tags: Any
    ) -> Tuple[Rollout, Dict[str, Any]]:
        """OpenEnv `POST /reset` on the next live endpoint: (the rollout, its observation `{episode_id, task_id,
        messages, tools}`: the first messages with the env's system prompt and tools section, and the task).
        `tags`: `trainer_step` / `group_id`, as in `create_rollout`."""
        body = _new_body({"task_id": task_id, "task": task}, **tags)
        r, res = self._open("/reset", body, "POST /reset", task_id)
        return r, res["observation"]

    def _open(self, path: str, body: Dict[str, Any], what: str, task_id: Optional[str]) -> Tuple[Rollout, Any]:
        """Create a rollout (`path`: /v1/rollouts, or OpenEnv's /reset) on the next live endpoint, with its log and
        its server's instance id: (the rollout, the server's answer)."""
        ep, res, instance = self._create(path, body, what)
        r = _opened(path, ep, res, task_id)
        r.log = RolloutLog(path, body)
        self._remember(r, instance)
        return r, res

    def _remember(self, r: Rollout, instance: Optional[str]) -> None:
        if instance:
            self._instances[r.rollout_id] = instance

    def _order(self, avoid: Optional[str] = None) -> List[str]:
        """Endpoints to try for a new rollout: round robin over those up (those whose host just lost a server after
        the others), then those marked down (draining), then those taken for gone (the background probe has not put
        them back yet); `avoid` (the endpoint a rollout was just lost on) last."""
        n = len(self.endpoints)
        start = self._next
        self._next = (self._next + 1) % n
        ring = [e for e in (self.endpoints[(start + i) % n] for i in range(n)) if e != avoid]
        gone = self.health.was_dead
        suspect = self.health.is_suspect
        up = [e for e in ring if not self._is_down(e) and not gone(e)]
        down = [e for e in ring if self._is_down(e) and not gone(e)]
        ordered = [e for e in up if not suspect(e)] + [e for e in up if suspect(e)] + down
        return ordered + [e for e in ring if gone(e)] + ([avoid] if avoid in self.endpoints else [])

    def recover(self, ep: str, wait: bool = False) -> bool:
        """Probe an endpoint taken for gone whose next probe is due: if its /health answers, it is back in rotation
        and the rollouts left there are freed. One probe per endpoint at a time across the process: with `wait`, wait
        for another thread's probe to end and probe again, else give up at once."""
        deadline = time.monotonic() + 10.0
        while not self.health.claim(ep):
            if not wait or time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        try:
            if not self.alive(ep):
                self._mark_down(ep, True, "/health silent")
                return False
            for rid, token in self.health.clear(ep):
                self.release_quietly(Rollout(ep, rid, token, ""))
            return True
        finally:
            self.health.unclaim(ep)

    def _post_new(
        self, path: str, body: Dict[str, Any], what: str, none: str, avoid: Optional[str] = None
    ) -> Tuple[str, Any, Optional[str]]:
        """POST a new episode to the next live endpoint (round robin, failing over at once past a refused, hung or
        draining one): (endpoint, body, instance id)."""
        errors = []
        for ep in self._order(avoid):
            if self.health.was_dead(ep) and not self._is_dead(ep):
                # reached only when every live endpoint failed: probe it here (a hung one costs 2 s)
                if not self.recover(ep):
                    errors.append("%s: still gone (%s)" % (ep, self.health.why.get(ep, "")))
                    continue
            elif self._is_dead(ep):
                errors.append("%s: gone moments ago (%s)" % (ep, self.health.why.get(ep, "")))
                continue
            try:
                _, res, instance = self._request(
                    ep, "POST", path, body, what=what, idempotent=False, fail_fast=True, watch=True)
            except _Lost as e:
                errors.append(str(e))
                continue
            return ep, res, instance
        raise _NoServer(none + ": " + "; ".join(errors))

    def _create(self, path: str, body: Dict[str, Any], what: str, avoid: Optional[str] = None):
        """`_post_new`, waiting (with backoff) up to `migrate_timeout_s` while no endpoint can take it (a fleet
        restarting); then BenchmaxRolloutLost. (endpoint, body, instance id)."""
        started = time.monotonic()
        backoff = 0.25
        while True:
            try:
                return self._post_new(path, body, what, "no env server could take the rollout", avoid)
            except _NoServer as e:
                if time.monotonic() - started + backoff >= self.migrate_timeout_s:
                    self.stats["lost_rollouts"] += 1
                    self.stats["infra_errors"] += 1
                    raise BenchmaxRolloutLost("%s: no live env server in %.0f s: %s" % (what, self.migrate_timeout_s, e))
                time.sleep(backoff)
                backoff = min(2.0, backoff * 2)

    def tasks(self, limit: Optional[int] = None, system_prompts: bool = False) -> List[Dict[str, Any]]:
        """The server's tasks without their gold data: `[{id, prompt | messages, meta}]` (GET /v1/tasks); with
        `system_prompts`, each with the env's `systemPrompt` for it (no rollout is created)."""
        query = (["include=systemPrompt"] if system_prompts else []) + (["limit=%d" % int(limit)] if limit is not None else [])
        return self._any("GET", "/v1/tasks" + ("?" + "&".join(query) if query else ""), None, "GET /v1/tasks")["tasks"]

    # -- calls on a rollout, and its migration ------------------------------------------------------------
    def _on_once(self, r: Rollout, action: str, body: Any, idempotent: bool) -> Any:
        """One call on the rollout's current server. `_Lost` when that server is gone for it."""
        fail_fast = self.migrate and r.log is not None
        what = "%s on rollout %s" % (action, r.rollout_id)
        path = _on_path(r, action)
        return self._request(
            r.endpoint, "POST", path, body, rollout=r, what=what, idempotent=idempotent, fail_fast=fail_fast, watch=fail_fast
        )[1]

    def _on(self, r: Rollout, action: str, body: Any, idempotent: bool, logged: bool = False) -> Any:
        """A call on a rollout; if its server is lost, the rollout migrates and the call is made there. `logged`:
        the call changes the rollout's state, so it and its result go into the rollout's log."""
        moves = 0
        while True:
            try:
                res = self._on_once(r, action, body, idempotent)
                break
            except _Lost as e:
                moves += 1
                if moves > len(self.endpoints) + 1:
                    self.stats["lost_rollouts"] += 1
                    self.release_quietly(r)
                    raise BenchmaxRolloutLost("rollout %s: its servers kept failing: %s" % (r.rollout_id, e))
                self._migrate(r, str(e))
        if logged and r.log is not None and not (isinstance(res, dict) and res.get("done")):
            r.log.ops.append((action, body, _canonical(action, res)))
        return res

    def _migrate(self, r: Rollout, why: str) -> None:
        """Rebuild the rollout on a live server from its log, checking each replayed result; then point `r` at it."""
        log = r.log
        assert log is not None
        started = time.monotonic()
        lost_on = r.endpoint
        errors = [why]
        while True:
            try:
                ep, res, instance = self._create(log.path, log.body, "migrating rollout %s" % r.rollout_id, lost_on)
            except BenchmaxRolloutLost as e:
                raise BenchmaxRolloutLost("%s (lost: %s)" % (e, "; ".join(errors[-3:])))
            fresh = _opened(log.path, ep, res, r.task_id)
            self._remember(fresh, instance)
            fresh.log = log  # replayed calls fail fast too (they are not logged again: only `_on` logs)
            try:
                for i, (action, body, want) in enumerate(log.ops):
                    try:
                        got = _canonical(action, self._on_once(fresh, action, body, idempotent=False))
                    except BenchmaxError as e:
                        got = "error: %s" % e
                    self.stats["replayed_calls"] += 1
                    if got != want:
                        self.release_quietly(fresh)
                        self.stats["lost_rollouts"] += 1
                        raise BenchmaxRolloutLost(
                            "rollout %s could not be migrated: replayed call %d (%s) gave another result than the model "
                            "saw (a nondeterministic tool?): %s instead of %s" % (r.rollout_id, i + 1, action, got[:200], want[:200])
                        )
            except _Lost as e:
                # the server it was being rebuilt on went too: free (or leave for freeing) that copy, and go on
                errors.append(str(e))
                self.release_quietly(fresh)
                lost_on = ep
                continue
            # the rollout left behind, where its server still answers (a slow call, a drain): freed, best effort
            self.release_quietly(Rollout(r.endpoint, r.rollout_id, r.token, r.task_id))
            r.endpoint, r.rollout_id, r.token = fresh.endpoint, fresh.rollout_id, fresh.token
            r.migrations += 1
            self.stats["migrations"] += 1
            self.stats["migration_s"].append(time.monotonic() - started)
            if len(self.stats["migration_s"]) > 10000:
                del self.stats["migration_s"][:5000]
            return

    def call_tool(self, r: Rollout, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        """{content, isError}."""
        return self._on(r, "call", {"name": name, "arguments": arguments}, idempotent=False, logged=True)

    def step(self, r: Rollout, content: Optional[str], tool_calls: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """One turn of the server's episode engine: it parses the reply's tool calls, runs them, and returns
        `{observation: {tool_results, messages}, reward: null, done: false}`, or at the end
        `{observation: {rewards, passed, truncated}, reward, done: true}` (the rollout is then released)."""
        action: Dict[str, Any] = {"type": "message", "content": content}
        if tool_calls:
            action["tool_calls"] = tool_calls
        return self._on(r, "step", {"action": action}, idempotent=False, logged=True)

    def reward(self, r: Rollout, messages: List[Dict[str, Any]]) -> Dict[str, Any]:
        """{reward, rewards, passed}."""
        return self._on(r, "reward", {"messages": messages}, idempotent=True)

    def fork(self, r: Rollout, n: int) -> List[Rollout]:
        res = self._on(r, "fork", {"n": n}, idempotent=False)
        kids = []
        for c in res["children"]:
            if r.rollout_id in self._instances:
                self._instances[c["rolloutId"]] = self._instances[r.rollout_id]
            kid = _rollout(r.endpoint, c, r.task_id)
            if kid.max_turns is None:
                kid.max_turns = r.max_turns
            kid.log = r.log.copy() if r.log is not None else None
            kids.append(kid)
        return kids

    def group_reward(self, task_id: Optional[str], task: Optional[Dict[str, Any]], members: List[Dict[str, Any]]):
        body: Dict[str, Any] = {"members": members}
        if task_id is not None:
            body["taskId"] = task_id
        if task is not None:
            body["task"] = task
        return self._any("POST", "/v1/group-reward", body, "group reward")

    def release(self, r: Rollout) -> None:
        """Free the rollout on its server. One gone (or only hung) keeps it as an orphan, freed if it answers again
        (a restarted server has forgotten it anyway)."""
        self._instances.pop(r.rollout_id, None)
        try:
            self._request(r.endpoint, "POST", _on_path(r, "release"), {}, rollout=r, fail_fast=True, watch=True)
        except _Lost:
            self.health.orphan(r.endpoint, r.rollout_id, r.token)

    def release_quietly(self, r: Rollout) -> None:
        """`release`, best effort: never raises (the server expires idle rollouts anyway)."""
        try:
            self.release(r)
        except Exception:
            pass

    def release_orphans(self, now: bool = False) -> int:
        """Free the rollouts left behind on endpoints that were gone (hung, or refused) and answer again; one probe
        per endpoint at a time across the process (2 s for one still silent). A create does this for the endpoint it
        tries; a trainer may call it at the end of a run (`now`: also endpoints whose next probe is not due yet).
        How many were freed."""
        freed = 0
        for ep in list(self.health.orphans):
            if self._is_dead(ep) and not now:
                continue
            left = len(self.health.orphans.get(ep, []))
            if self.recover(ep, wait=now):
                freed += left
        return freed

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for c in conns:
                c.close()


class _Probe:
    """`probe()`: does the endpoint's /health answer; `probe.gone()`: did another request find it gone."""

    def __init__(self, client: "BenchmaxClient", endpoint: str):
        self.client = client
        self.endpoint = endpoint

    def __call__(self) -> bool:
        return self.client.alive(self.endpoint)

    def gone(self) -> bool:
        return self.client.health.is_dead(self.endpoint)


def _rollout(endpoint: str, res: Dict[str, Any], task_id: str) -> Rollout:
    mt = res.get("maxTurns")
    return Rollout(
        endpoint,
        res["rolloutId"],
        res["token"],
        res.get("taskId", task_id),
        res.get("systemPrompt", ""),
        bool(res.get("customActions")),
        int(mt) if isinstance(mt, (int, float)) and mt > 0 else None,
    )


def _opened(path: str, endpoint: str, res: Dict[str, Any], task_id: Optional[str]) -> Rollout:
    """The rollout a create's answer names: `POST /v1/rollouts`'s, or the observation of OpenEnv's `POST /reset`
    (its system prompt: the first messages' system message)."""
    if path != "/reset":
        return _rollout(endpoint, res, task_id or "")
    obs = res["observation"]
    system = next((m.get("content") for m in obs.get("messages") or [] if m.get("role") == "system"), "")
    return Rollout(endpoint, obs["episode_id"], obs["rollout_token"], obs.get("task_id") or task_id or "", system or "")


def _on_path(r: Rollout, action: str) -> str:
    return "/v1/rollouts/%s/%s" % (quote(r.rollout_id, safe=""), action)


def _decode(data: bytes) -> Any:
    """A response body: its JSON, else its text (None when empty)."""
    try:
        return json.loads(data.decode("utf-8")) if data else None
    except ValueError:
        return data.decode("utf-8", "replace")


def _instance(headers: Any) -> Optional[str]:
    """The server instance that answered (`x-benchmax-instance`): a rollout stays on the instance that created it."""
    return headers.get("x-benchmax-instance") if headers is not None else None


def _draining(status: int, body: Any, headers: Any) -> bool:
    """Whether a server answered that it is draining (it takes no new rollouts)."""
    if headers is not None and headers.get("x-benchmax-draining") == "1":
        return True
    if status != 503 or not isinstance(body, dict):
        return False
    err = body.get("error")
    return isinstance(err, dict) and "DRAINING" in (str(err.get("code")), str(err.get("reason")))


def _message(body: Any) -> str:
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(body)[:300]
