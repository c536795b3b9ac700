/**
 * run_python's live interpreter (runs inside the jail as `python3 -I -S -B /box/runner.py PATHS`): imports openpyxl
 * once, says it is ready, then runs each request's code in one persistent namespace, so variables, imports and an
 * open workbook carry over between calls, like a notebook kernel.
 *
 * Per request: when the host sends workbook bytes they replace `/work/workbook.xlsx` first; `print` output and the
 * traceback of the model's code are captured (capped); afterwards every other process of the jail is killed and reaped
 * (the interpreter is the PID namespace's first process; the runner calls its own references, so code that rebinds
 * `os.kill` or `os.waitpid` does not change them, and whatever the code does to the runner, once the answer is in the
 * host stops the interpreter and kills the rest of the jail from outside: live-jail.ts, freeze.ts), and when the
 * call succeeded and the workbook file changed
 * (inode, size or mtime) its bytes go back to the host. The protocol has its own descriptors: fd 0 and 1 point at
 * /dev/null while the model's code runs.
 */
export const PY_RUNNER = String.raw`
import os, sys
os.closerange(3, 1 << 16)
_pin, _pout = os.dup(0), os.dup(1)
_null = os.open("/dev/null", os.O_RDWR)
os.dup2(_null, 0)
os.dup2(_null, 1)
os.close(_null)
sys.path[:0] = sys.argv[1].split(os.pathsep) if len(sys.argv) > 1 and sys.argv[1] else []
os.chdir("/work")
import io, json, linecache, signal, stat, struct, traceback
import openpyxl
# the runner's own references: code that rebinds os.kill / os.waitpid does not change what the runner calls
_kill, _waitpid, _WNOHANG = os.kill, os.waitpid, os.WNOHANG

def _reap():
    # children the host killed after the last call (zombies until reaped), then nothing is left waiting
    try:
        while _waitpid(-1, _WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass

WB = "/work/workbook.xlsx"

def _readn(n):
    parts = []
    while n:
        b = os.read(_pin, min(n, 1 << 20))
        if not b:
            os._exit(0)
        parts.append(b)
        n -= len(b)
    return b"".join(parts)

def _recv():
    hl, bl = struct.unpack(">II", _readn(8))
    head = json.loads(_readn(hl).decode("utf-8"))
    return head, (_readn(bl) if bl else b"")

def _send(head, body=b""):
    data = json.dumps(head).encode("utf-8")
    buf = memoryview(struct.pack(">II", len(data), len(body)) + data + body)
    while buf:
        n = os.write(_pout, buf)
        buf = buf[n:]

def _stamp():
    try:
        st = os.lstat(WB)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, stat.S_ISREG(st.st_mode))

class _Cap(io.TextIOBase):
    def __init__(self, limit):
        self.parts, self.n, self.limit, self.over = [], 0, limit, False
    def writable(self):
        return True
    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str")
        if self.n < self.limit:
            self.parts.append(s[: self.limit - self.n])
        self.n += len(s)
        if self.n > self.limit:
            self.over = True
        return len(s)
    def text(self):
        return "".join(self.parts)

def _warm():
    # the paths a rollout's first call takes, run once before saying ready (modules openpyxl imports on first use)
    b = io.BytesIO()
    w = openpyxl.Workbook()
    s = w.active
    for r in range(1, 21):
        s.cell(r, 1, r).number_format = "0.00"
        s.cell(r, 2, "t%d" % (r % 5)).font = openpyxl.styles.Font(bold=True)
        s.cell(r, 3, "=A%d*2" % r).fill = openpyxl.styles.PatternFill("solid", fgColor="FFFF0000")
        s.cell(r, 4, r * 1.5)
    s.merge_cells("E1:F2")
    w.create_sheet("two")["A1"] = "x"
    w.save(b)
    for data_only in (False, True):
        openpyxl.load_workbook(io.BytesIO(b.getvalue()), data_only=data_only).active["A2"].value
try:
    _warm()
except Exception:
    pass
del _warm
import gc, time
gc.collect()

_g = {"__name__": "__main__", "__builtins__": __builtins__, "openpyxl": openpyxl,
      "workbook_path": WB, "input_path": WB, "output_path": WB}
_last = _stamp()
_n = 0
_send({"t": "ready"})
while True:
    req, body = _recv()
    _reap()
    _t0 = time.perf_counter()
    if req.get("wb"):
        with open(WB + ".in", "wb") as f:
            f.write(body)
        os.replace(WB + ".in", WB)
        _last = _stamp()
    _n += 1
    name = "code_%d.py" % _n if _n > 1 else "code.py"
    code = req.get("code", "")
    lim = int(req.get("maxOut", 8000))
    _t1 = time.perf_counter()
    out, err = _Cap(lim), _Cap(4000)
    ok = True
    sys.stdout, sys.stderr = out, err
    try:
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        exec(compile(code, name, "exec"), _g)
    except SystemExit as e:
        if e.code not in (None, 0):
            ok = False
            err.write("SystemExit: %s\n" % (e.code,))
    except BaseException as e:
        ok = False
        try:
            tb = traceback.extract_tb(e.__traceback__)
            frames = [f for f in tb if f.filename.startswith("code")][-4:]
            err.write("".join(["Traceback (your code):\n"] + traceback.format_list(frames) + traceback.format_exception_only(type(e), e)))
        except BaseException:
            err.write("%s\n" % type(e).__name__)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    try:
        _kill(-1, signal.SIGKILL)
    except OSError:
        pass
    try:
        while True:
            _waitpid(-1, 0)
    except ChildProcessError:
        pass
    _t2 = time.perf_counter()
    now = _stamp()
    wb = "same"
    back = b""
    if now != _last:
        if now is None or not now[3]:
            wb = "bad"
            if ok:
                ok = False
                err.write("workbook.xlsx is no longer a regular file (the workbook was left as it was)\n")
        elif ok:
            try:
                with open(WB, "rb") as f:
                    back = f.read()
                wb = "changed"
                _last = _stamp()
            except OSError as e:
                ok = False
                wb = "bad"
                err.write("workbook.xlsx could not be read back: %s\n" % e)
        else:
            wb = "changed"
    _send({"t": "done", "ok": ok, "out": out.text(), "trunc": out.over, "err": err.text(), "wb": wb,
           "ms": {"wb": (_t1 - _t0) * 1e3, "code": (_t2 - _t1) * 1e3, "save": (time.perf_counter() - _t2) * 1e3}}, back)
`;
