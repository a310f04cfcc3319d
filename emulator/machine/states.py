"""What a thread of a batch is doing: running at its pc, waiting at a barrier, or exited (pc INF)."""
import numpy as np

RUNNING, AT_BARRIER, EXITED = 0, 1, 2
#: the pc of a thread that is not running (exited, or parked at a barrier)
INF = np.iinfo(np.int32).max
NUM_BARRIERS = 16
#: bar_wait of a lane waiting at bar.warp.sync (CTA barriers are 0 .. NUM_BARRIERS - 1)
WARP_SYNC = NUM_BARRIERS
