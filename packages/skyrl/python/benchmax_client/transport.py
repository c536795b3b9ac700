"""The HTTP transport to `benchmax serve` servers: keep-alive, retries of transient failures, fleet failover, and a
check that a rollout stays on the server instance that created it (stdlib only)."""

import http.client
import json
import os
import random
import threading
import time
from dataclasses import dataclass
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


class _Connection:
    """One keep-alive HTTP connection to an endpoint (used by one request at a time)."""

    def __init__(self, url: str, timeout: float):
        parts = urlsplit(url)
        self.secure = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.secure else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.conn: Optional[http.client.HTTPConnection] = None

    def request(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str]):
        if self.conn is None:
            cls = http.client.HTTPSConnection if self.secure else http.client.HTTPConnection
            self.conn = cls(self.host, self.port, timeout=self.timeout)
        try:
            self.conn.request(method, self.prefix + path, body=body, headers=headers)
            res = self.conn.getresponse()
            data = res.read()
            return res.status, data, res.getheader("x-benchmax-instance")
        except Exception:
            self.close()
            raise

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None



def _tag(body: Dict[str, Any], trainer_step: Optional[int], group_id: Optional[str]) -> None:
    """Put the trainer step and group id under the request's `metadata` (what `serve --record` reads)."""
    meta: Dict[str, Any] = {}
    if trainer_step is not None:
        if isinstance(trainer_step, bool) or not isinstance(trainer_step, (int, float)):
            raise TypeError("trainer_step must be a number, got %r" % (trainer_step,))
        meta["trainer_step"] = trainer_step
    if group_id is not None:
        meta["group_id"] = str(group_id)
    if meta:
        body["metadata"] = meta

class BenchmaxClient:
    """Talks to one or more env servers (a fleet): new rollouts go to a live endpoint, later calls stay on it.

    Transient failures (connection errors, timeouts, HTTP 429/502/503/504) are retried `retries` times with
    exponential backoff; then a BenchmaxInfraError is raised. Counters are in `stats`.
    """

    def __init__(
        self,
        endpoints: Union[str, Sequence[str], None] = None,
        token: Optional[str] = None,
        retries: int = 3,
        backoff_s: float = 0.5,
        timeout_s: float = 120.0,
    ):
        self.endpoints = _split_endpoints(endpoints)
        self.token = token if token is not None else os.environ.get("BENCHMAX_TOKEN") or None
        self.retries = max(0, int(retries))
        self.backoff_s = float(backoff_s)
        self.timeout_s = float(timeout_s)
        self._next = random.randrange(len(self.endpoints))
        self._instances: Dict[str, str] = {}
        self.stats = {"requests": 0, "retries": 0, "infra_errors": 0}
        self._setup_pool()

    def _setup_pool(self) -> None:
        # idle keep-alive connections per endpoint, shared by threads (SkyRL runs env.step in a thread pool,
        # the cookbook adapter in asyncio.to_thread); a connection is used by one request at a time
        self._idle: Dict[str, List[_Connection]] = {}
        self._lock = threading.Lock()

    # -- pickling: configuration only (the cookbook sends builders to rollout workers by pickle) ----------
    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        for k in ("_idle", "_lock"):
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
        return _Connection(endpoint, self.timeout_s)

    def _put_back(self, endpoint: str, conn: _Connection) -> None:
        if conn.conn is None:
            return
        with self._lock:
            self._idle.setdefault(endpoint, []).append(conn)

    def request(
        self,
        endpoint: str,
        method: str,
        path: str,
        body: Any = None,
        headers: Optional[Dict[str, str]] = None,
        idempotent: bool = True,
    ):
        """(status, json body, instance id). Retries transient failures; raises BenchmaxInfraError after them."""
        h = {"accept": "application/json"}
        if self.token:
            h["authorization"] = "Bearer " + self.token
        if headers:
            h.update(headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode("utf-8")
            h["content-type"] = "application/json"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats["retries"] += 1
                time.sleep(self.backoff_s * (2 ** (attempt - 1)))
            self.stats["requests"] += 1
            conn = self._acquire(endpoint)
            try:
                status, data, instance = conn.request(method, path, payload, h)
                self._put_back(endpoint, conn)
            except ConnectionRefusedError as e:
                last = "connection refused (%s)" % e
                continue
            except (OSError, http.client.HTTPException) as e:
                # the request may have reached the server: only idempotent requests are sent again
                last = "%s: %s" % (type(e).__name__, e)
                if idempotent or isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError)):
                    continue
                break
            try:
                parsed = json.loads(data.decode("utf-8")) if data else None
            except ValueError:
                parsed = data.decode("utf-8", "replace")
            if status in TRANSIENT_STATUS:
                last = "HTTP %d: %s" % (status, _message(parsed))
                continue
            return status, parsed, instance
        self.stats["infra_errors"] += 1
        raise BenchmaxInfraError(
            "env server %s failed on %s %s after %d attempt(s): %s" % (endpoint, method, path, attempt + 1, last)
        )

    def _check(self, status: int, body: Any, what: str, endpoint: str) -> Any:
        if 200 <= status < 300:
            return body
        msg = "%s: %s failed (HTTP %d): %s" % (endpoint, what, status, _message(body))
        if status in (401, 403):
            self.stats["infra_errors"] += 1
            raise BenchmaxInfraError(msg + " (check BENCHMAX_TOKEN)")
        raise BenchmaxEnvError(msg)

    # -- API ---------------------------------------------------------------------------------------------
    def metadata(self) -> Dict[str, Any]:
        errors = []
        for ep in self.endpoints:
            try:
                status, body, _ = self.request(ep, "GET", "/metadata")
                return self._check(status, body, "GET /metadata", ep)
            except BenchmaxInfraError as e:
                errors.append(str(e))
        raise BenchmaxInfraError("no endpoint answered /metadata: " + "; ".join(errors))

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
        body: Dict[str, Any] = {}
        if task_id is not None:
            body["taskId"] = task_id
        if task is not None:
            body["task"] = task
        if max_turns is not None:
            body["maxTurns"] = int(max_turns)
        _tag(body, trainer_step, group_id)
        ep, res = self._post_new("/v1/rollouts", body, "creating a rollout", "no env server could create a rollout")
        return _rollout(ep, res, task_id or "")

    def reset(
        self,
        task_id: Optional[str] = None,
        task: Optional[Dict[str, Any]] = None,
        trainer_step: Optional[int] = None,
        group_id: Optional[str] = None,
    ) -> Tuple[Rollout, Dict[str, Any]]:
        """OpenEnv `POST /reset` on the next live endpoint: (the rollout, its observation `{episode_id, task_id,
        messages, tools}`: the first messages with the env's system prompt and tools section, and the task).
        `trainer_step` / `group_id` tag it as in `create_rollout`."""
        body: Dict[str, Any] = {}
        if task_id is not None:
            body["task_id"] = task_id
        if task is not None:
            body["task"] = task
        _tag(body, trainer_step, group_id)
        ep, res = self._post_new("/reset", body, "POST /reset", "no env server could reset an episode")
        obs = res["observation"]
        system = next((m.get("content") for m in obs.get("messages") or [] if m.get("role") == "system"), "")
        return Rollout(ep, obs["episode_id"], obs["rollout_token"], obs.get("task_id") or task_id or "", system or ""), obs

    def _post_new(self, path: str, body: Dict[str, Any], what: str, none: str) -> Tuple[str, Any]:
        """POST a new episode to the next live endpoint (round robin, failing over); remembers the instance that
        answered, so a later call that lands on a restarted server is an infra error. (endpoint, body)."""
        errors = []
        n = len(self.endpoints)
        start = self._next
        self._next = (self._next + 1) % n
        for i in range(n):
            ep = self.endpoints[(start + i) % n]
            try:
                status, res, instance = self.request(ep, "POST", path, body, idempotent=False)
            except BenchmaxInfraError as e:
                errors.append(str(e))
                continue
            res = self._check(status, res, what, ep)
            rid = res["observation"]["episode_id"] if "observation" in res else res["rolloutId"]
            if instance:
                self._instances[rid] = instance
            return ep, res
        raise BenchmaxInfraError(none + ": " + "; ".join(errors))

    def tasks(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The server's tasks without their gold data: `[{id, prompt | messages, meta}]` (GET /v1/tasks)."""
        ep = self.endpoints[0]
        path = "/v1/tasks" + ("?limit=%d" % int(limit) if limit is not None else "")
        status, res, _ = self.request(ep, "GET", path)
        return self._check(status, res, "GET /v1/tasks", ep)["tasks"]

    def _on(self, r: Rollout, action: str, body: Any, idempotent: bool) -> Any:
        path = "/v1/rollouts/%s/%s" % (quote(r.rollout_id, safe=""), action)
        status, res, instance = self.request(r.endpoint, "POST", path, body, {"x-rollout-token": r.token}, idempotent)
        known = self._instances.get(r.rollout_id)
        if status == 404 or (known and instance and instance != known):
            self.stats["infra_errors"] += 1
            raise BenchmaxInfraError(
                "env server %s lost rollout %s (restarted or expired): %s" % (r.endpoint, r.rollout_id, _message(res))
            )
        return self._check(status, res, "%s on rollout %s" % (action, r.rollout_id), r.endpoint)

    def call_tool(self, r: Rollout, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        """{content, isError}."""
        return self._on(r, "call", {"name": name, "arguments": arguments}, idempotent=False)

    def step(self, r: Rollout, content: Optional[str], tool_calls: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """One turn of the server's episode engine: it parses the reply's tool calls, runs them, and returns
        `{observation: {tool_results, messages}, reward: null, done: false}`, or at the end
        `{observation: {rewards, passed, truncated}, reward, done: true}` (the rollout is then released)."""
        action: Dict[str, Any] = {"type": "message", "content": content}
        if tool_calls:
            action["tool_calls"] = tool_calls
        return self._on(r, "step", {"action": action}, idempotent=False)

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
            kids.append(kid)
        return kids

    def group_reward(self, task_id: Optional[str], task: Optional[Dict[str, Any]], members: List[Dict[str, Any]]):
        body: Dict[str, Any] = {"members": members}
        if task_id is not None:
            body["taskId"] = task_id
        if task is not None:
            body["task"] = task
        ep = self.endpoints[0]
        status, res, _ = self.request(ep, "POST", "/v1/group-reward", body)
        return self._check(status, res, "group reward", ep)

    def release(self, r: Rollout) -> None:
        path = "/v1/rollouts/%s/release" % quote(r.rollout_id, safe="")
        self._instances.pop(r.rollout_id, None)
        try:
            self.request(r.endpoint, "POST", path, {}, {"x-rollout-token": r.token})
        except BenchmaxInfraError:
            pass  # the server is gone: nothing left to free

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for c in conns:
                c.close()


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


def _message(body: Any) -> str:
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(body)[:300]
