"""mpi4py's public names, and what the stand-in gives for one it does not cover.

The names are those of mpi4py 4.1.2 (its ``.pyi`` stubs): of ``mpi4py.MPI``, of the classes a
program meets there, and of mpi4py's other public modules. A name mpi4py has and the stand-in
lacks is a ``NotCovered``: calling it, or using it as a value, raises NotImplementedError
naming it -- never an AttributeError, which would read as the program's own bug. That holds
on a module (PEP 562's module ``__getattr__``), on an instance, and on the class itself
(``MPI.Request.Waitany``: the classes' metaclass, ``Refusing``). A name mpi4py lacks too is
an AttributeError, as with mpi4py. ``tests/test_mpi_names.py`` checks the lists against the
installed mpi4py.
"""

from __future__ import annotations

# Why a family of names is not covered (the message says it): the first part of a name's
# dotted path found here.
REASONS = {"Win": "one-sided communication", "File": "MPI-IO", "Open_port": "dynamic processes",
           "Lookup_name": "dynamic processes", "Publish_name": "dynamic processes",
           "Intercomm": "intercommunicators", "Cartcomm": "topologies",
           "Graphcomm": "topologies", "Distgraphcomm": "topologies", "Topocomm": "topologies",
           "Prequest": "persistent requests", "Grequest": "generalized requests",
           "Message": "matched messages", "Session": "sessions",
           "futures": "MPI process pools", "pool": "MPI process pools",
           "sync": "one-sided communication"}

_NAMES = {
    "MPI": """
        AINT ANY_SOURCE ANY_TAG APPNUM Add_error_class Add_error_code Add_error_string Aint_add
        Aint_diff Alloc_mem Attach_buffer BAND BFLOAT16_T BOOL BOR BOTTOM BSEND_OVERHEAD
        BUFFER_AUTOMATIC BXOR BYTE BottomType BufferAutomaticType CART CHAR CHARACTER
        COMBINER_CONTIGUOUS COMBINER_DARRAY COMBINER_DUP COMBINER_F90_COMPLEX
        COMBINER_F90_INTEGER COMBINER_F90_REAL COMBINER_HINDEXED COMBINER_HINDEXED_BLOCK
        COMBINER_HVECTOR COMBINER_INDEXED COMBINER_INDEXED_BLOCK COMBINER_NAMED COMBINER_RESIZED
        COMBINER_STRUCT COMBINER_SUBARRAY COMBINER_VALUE_INDEX COMBINER_VECTOR COMM_NULL
        COMM_SELF COMM_TYPE_HW_GUIDED COMM_TYPE_HW_UNGUIDED COMM_TYPE_RESOURCE_GUIDED
        COMM_TYPE_SHARED COMM_WORLD COMPLEX COMPLEX16 COMPLEX32 COMPLEX4 COMPLEX8 CONGRUENT
        COUNT CXX_BOOL CXX_DOUBLE_COMPLEX CXX_FLOAT_COMPLEX CXX_LONG_DOUBLE_COMPLEX C_BOOL
        C_COMPLEX C_DOUBLE_COMPLEX C_FLOAT_COMPLEX C_LONG_DOUBLE_COMPLEX Cartcomm Close_port
        Comm Compute_dims DATATYPE_NULL DISPLACEMENT_CURRENT DISP_CUR DISTRIBUTE_BLOCK
        DISTRIBUTE_CYCLIC DISTRIBUTE_DFLT_DARG DISTRIBUTE_NONE DIST_GRAPH DOUBLE DOUBLE_COMPLEX
        DOUBLE_INT DOUBLE_PRECISION Datatype Detach_buffer Distgraphcomm ERRHANDLER_NULL
        ERRORS_ABORT ERRORS_ARE_FATAL ERRORS_RETURN ERR_ABI ERR_ACCESS ERR_AMODE ERR_ARG
        ERR_ASSERT ERR_BAD_FILE ERR_BASE ERR_BUFFER ERR_COMM ERR_CONVERSION ERR_COUNT ERR_DIMS
        ERR_DISP ERR_DUP_DATAREP ERR_ERRHANDLER ERR_FILE ERR_FILE_EXISTS ERR_FILE_IN_USE
        ERR_GROUP ERR_INFO ERR_INFO_KEY ERR_INFO_NOKEY ERR_INFO_VALUE ERR_INTERN ERR_IN_STATUS
        ERR_IO ERR_KEYVAL ERR_LASTCODE ERR_LOCKTYPE ERR_NAME ERR_NOT_SAME ERR_NO_MEM
        ERR_NO_SPACE ERR_NO_SUCH_FILE ERR_OP ERR_OTHER ERR_PENDING ERR_PORT ERR_PROC_ABORTED
        ERR_PROC_FAILED ERR_PROC_FAILED_PENDING ERR_QUOTA ERR_RANK ERR_READ_ONLY ERR_REQUEST
        ERR_REVOKED ERR_RMA_ATTACH ERR_RMA_CONFLICT ERR_RMA_FLAVOR ERR_RMA_RANGE ERR_RMA_SHARED
        ERR_RMA_SYNC ERR_ROOT ERR_SERVICE ERR_SESSION ERR_SIZE ERR_SPAWN ERR_TAG ERR_TOPOLOGY
        ERR_TRUNCATE ERR_TYPE ERR_UNKNOWN ERR_UNSUPPORTED_DATAREP ERR_UNSUPPORTED_OPERATION
        ERR_VALUE_TOO_LARGE ERR_WIN Errhandler Exception FILE_NULL FLOAT FLOAT16_T FLOAT32_T
        FLOAT64_T FLOAT_INT F_BOOL F_COMPLEX F_DOUBLE F_DOUBLE_COMPLEX F_ERROR F_FLOAT
        F_FLOAT_COMPLEX F_INT F_SOURCE F_STATUS_SIZE F_TAG File Finalize Flush_buffer Free_mem
        GRAPH GROUP_EMPTY GROUP_NULL Get_abi_fortran_info Get_abi_info Get_abi_version
        Get_address Get_error_class Get_error_string Get_hw_resource_info Get_library_version
        Get_processor_name Get_version Graphcomm Grequest Group IDENT INFO_ENV INFO_NULL INT
        INT16_T INT32_T INT64_T INT8_T INTEGER INTEGER1 INTEGER16 INTEGER2 INTEGER4 INTEGER8
        INT_INT IN_PLACE IO Iflush_buffer InPlaceType Info Init Init_thread Intercomm Intracomm
        Is_finalized Is_initialized Is_thread_main KEYVAL_INVALID LAND LASTUSEDCODE
        LOCK_EXCLUSIVE LOCK_SHARED LOGICAL LOGICAL1 LOGICAL16 LOGICAL2 LOGICAL4 LOGICAL8 LONG
        LONG_DOUBLE LONG_DOUBLE_INT LONG_INT LONG_LONG LOR LXOR Lookup_name MAX MAXLOC
        MAX_DATAREP_STRING MAX_ERROR_STRING MAX_INFO_KEY MAX_INFO_VAL MAX_LIBRARY_VERSION_STRING
        MAX_OBJECT_NAME MAX_PORT_NAME MAX_PROCESSOR_NAME MAX_PSET_NAME_LEN MAX_STRINGTAG_LEN
        MESSAGE_NO_PROC MESSAGE_NULL MIN MINLOC MODE_APPEND MODE_CREATE MODE_DELETE_ON_CLOSE
        MODE_EXCL MODE_NOCHECK MODE_NOPRECEDE MODE_NOPUT MODE_NOSTORE MODE_NOSUCCEED MODE_RDONLY
        MODE_RDWR MODE_SEQUENTIAL MODE_UNIQUE_OPEN MODE_WRONLY Message NO_OP OFFSET OP_NULL
        ORDER_C ORDER_F ORDER_FORTRAN Op Open_port PACKED PROC_NULL PROD Pcontrol Pickle
        Prequest Publish_name Query_thread REAL REAL16 REAL2 REAL4 REAL8 REPLACE REQUEST_NULL
        ROOT Register_datarep Remove_error_class Remove_error_code Remove_error_string Request
        SEEK_CUR SEEK_END SEEK_SET SESSION_NULL SHORT SHORT_INT SIGNED_CHAR SIGNED_INT
        SIGNED_LONG SIGNED_LONG_LONG SIGNED_SHORT SIMILAR SINT16_T SINT32_T SINT64_T SINT8_T
        SUBVERSION SUCCESS SUM Session Status TAG_UB THREAD_FUNNELED THREAD_MULTIPLE
        THREAD_SERIALIZED THREAD_SINGLE TWOINT TYPECLASS_COMPLEX TYPECLASS_INTEGER
        TYPECLASS_LOGICAL TYPECLASS_REAL Topocomm UINT16_T UINT32_T UINT64_T UINT8_T UNDEFINED
        UNEQUAL UNIVERSE_SIZE UNSIGNED UNSIGNED_CHAR UNSIGNED_INT UNSIGNED_LONG
        UNSIGNED_LONG_LONG UNSIGNED_SHORT UNWEIGHTED Unpublish_name VERSION WCHAR WEIGHTS_EMPTY
        WIN_BASE WIN_CREATE_FLAVOR WIN_DISP_UNIT WIN_FLAVOR WIN_FLAVOR_ALLOCATE
        WIN_FLAVOR_CREATE WIN_FLAVOR_DYNAMIC WIN_FLAVOR_SHARED WIN_MODEL WIN_NULL WIN_SEPARATE
        WIN_SIZE WIN_UNIFIED WTIME_IS_GLOBAL Win Wtick Wtime buffer get_vendor memory pickle
    """,
    "Intracomm": """
        Abort Accept Ack_failed Agree Allgather Allgather_init Allgatherv Allgatherv_init
        Allreduce Allreduce_init Alltoall Alltoall_init Alltoallv Alltoallv_init Alltoallw
        Alltoallw_init Attach_buffer Barrier Barrier_init Bcast Bcast_init Bsend Bsend_init
        Call_errhandler Cart_map Clone Compare Connect Create Create_cart Create_dist_graph
        Create_dist_graph_adjacent Create_errhandler Create_from_group Create_graph Create_group
        Create_intercomm Create_keyval Delete_attr Detach_buffer Disconnect Dup Dup_with_info
        Exscan Exscan_init Flush_buffer Free Free_keyval Gather Gather_init Gatherv Gatherv_init
        Get_attr Get_errhandler Get_failed Get_group Get_info Get_name Get_parent Get_rank
        Get_size Get_topology Graph_map Iagree Iallgather Iallgatherv Iallreduce Ialltoall
        Ialltoallv Ialltoallw Ibarrier Ibcast Ibsend Idup Idup_with_info Iexscan Iflush_buffer
        Igather Igatherv Improbe Iprobe Irecv Ireduce Ireduce_scatter Ireduce_scatter_block
        Irsend Is_inter Is_intra Is_revoked Iscan Iscatter Iscatterv Isend Isendrecv
        Isendrecv_replace Ishrink Issend Join Mprobe Precv_init Probe Psend_init Recv Recv_init
        Reduce Reduce_init Reduce_scatter Reduce_scatter_block Reduce_scatter_block_init
        Reduce_scatter_init Revoke Rsend Rsend_init Scan Scan_init Scatter Scatter_init Scatterv
        Scatterv_init Send Send_init Sendrecv Sendrecv_replace Set_attr Set_errhandler Set_info
        Set_name Shrink Spawn Spawn_multiple Split Split_type Ssend Ssend_init allgather
        allreduce alltoall barrier bcast bsend exscan f2py free fromhandle fromint gather group
        handle ibsend improbe info iprobe irecv is_inter is_intra is_topo isend issend mprobe
        name probe py2f rank recv reduce scan scatter send sendrecv size ssend toint topology
    """,
    "Request": """
        Cancel Free Get_status Get_status_all Get_status_any Get_status_some Test Testall
        Testany Testsome Wait Waitall Waitany Waitsome cancel f2py free fromhandle fromint
        get_status get_status_all get_status_any get_status_some handle py2f test testall
        testany testsome toint wait waitall waitany waitsome
    """,
    "Status": """
        Get_count Get_elements Get_error Get_source Get_tag Is_cancelled Set_cancelled
        Set_elements Set_error Set_source Set_tag cancelled count error f2py py2f source tag
        tomemory
    """,
    "Datatype": """
        Commit Create_contiguous Create_darray Create_dup Create_f90_complex Create_f90_integer
        Create_f90_real Create_hindexed Create_hindexed_block Create_hvector Create_indexed
        Create_indexed_block Create_keyval Create_resized Create_struct Create_subarray
        Create_vector Delete_attr Dup Free Free_keyval Get_attr Get_contents Get_envelope
        Get_extent Get_name Get_size Get_true_extent Get_value_index Match_size Pack
        Pack_external Pack_external_size Pack_size Resized Set_attr Set_name Unpack
        Unpack_external combiner contents decode envelope extent f2py free fromcode fromhandle
        fromint handle is_named is_predefined lb name py2f size tocode toint true_extent true_lb
        true_ub typechar typestr ub
    """,
    "Op": """
        Create Free Is_commutative Reduce_local f2py free fromhandle fromint handle
        is_commutative is_predefined py2f toint
    """,
    "Group": """
        Compare Create_from_session_pset Difference Dup Excl Free Get_rank Get_size Incl
        Intersect Intersection Range_excl Range_incl Translate_ranks Union f2py free fromhandle
        fromint handle py2f rank size toint
    """,
    "Exception": """
        Get_error_class Get_error_code Get_error_string error_class error_code error_string
    """,
    # mpi4py's other public modules
    "mpi4py": "MPI Rc get_config get_include profile rc",
    "mpi4py.bench": "futures helloworld main pingpong ringtest",
    "mpi4py.run": "main run_command_line set_abort_status",
    "mpi4py.typing": """
        Aint Bottom BufSpec BufSpecB BufSpecV BufSpecW Buffer Count Displ InPlace Offset S
        SupportsBuffer SupportsCAI SupportsDLPack T TargetSpec TypeSpec U V
    """,
    "mpi4py.futures": """
        ALL_COMPLETED BrokenExecutor CancelledError Executor FIRST_COMPLETED FIRST_EXCEPTION
        Future InvalidStateError MPICommExecutor MPIPoolExecutor ProcessPoolExecutor
        ThreadPoolExecutor TimeoutError as_completed collect compose get_comm_workers wait
    """,
    "mpi4py.futures.aplus": "ThenableFuture catch then",
    "mpi4py.futures.pool": """
        MPICommExecutor MPIPoolExecutor ProcessPoolExecutor ThreadPoolExecutor get_comm_workers
    """,
    "mpi4py.futures.server": "main",
    "mpi4py.futures.util": "collect compose",
    "mpi4py.util": "",
    "mpi4py.util.dtlib": "from_numpy_dtype to_numpy_dtype",
    "mpi4py.util.pkl5": """
        ANY_SOURCE ANY_TAG Comm Intercomm Intracomm Message PROC_NULL Pickle ROOT Request Status
        pickle
    """,
    "mpi4py.util.pool": "ApplyResult AsyncResult MapResult Pool ThreadPool",
    "mpi4py.util.sync": "Condition Counter Mutex Semaphore Sequential",
}
NAMES = {owner: frozenset(text.split()) for owner, text in _NAMES.items()}


class NotCovered:
    """A name of mpi4py the stand-in does not cover: every use raises NotImplementedError
    naming it; a name read from it (``MPI.Win.Create``) is one too, named in full."""

    def __init__(self, qualname: str):
        object.__setattr__(self, "_qualname", qualname)

    def _refuse(self, *args, **kwargs):
        name = self._qualname
        why = next((REASONS[part] for part in name.split(".") if part in REASONS), None)
        what = f"{name} ({why})" if why else name
        raise NotImplementedError(f"{what} is not covered by trtsim's MPI stand-in")

    __call__ = __mro_entries__ = _refuse            # __mro_entries__: `class X(MPIPoolExecutor)`
    __bool__ = __int__ = __index__ = __float__ = __iter__ = __len__ = _refuse
    __getitem__ = __add__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __enter__ = __exit__ = _refuse                  # `with MPICommExecutor(...)`

    def __getattr__(self, name: str) -> "NotCovered":
        if name.startswith("__"):
            raise AttributeError(name)
        return NotCovered(f"{self._qualname}.{name}")

    def __setattr__(self, name: str, value) -> None:
        self._refuse()

    def __repr__(self) -> str:
        return f"<{self._qualname}: not covered by trtsim's MPI stand-in>"


def not_covered(owner: str, name: str) -> NotCovered:
    """What ``owner.name`` is when the stand-in lacks it (``owner``: ``MPI`` for the module
    mpi4py.MPI, a class of it, or another module of mpi4py by its full name); AttributeError
    for private names and names mpi4py lacks too."""
    module = owner == "MPI" or owner.startswith("mpi4py")
    if name.startswith("_") or name not in NAMES.get(owner, ()):
        where = f"module {'mpi4py.MPI' if owner == 'MPI' else owner!r}" if module \
            else f"'{owner}' object"
        raise AttributeError(f"{where} has no attribute {name!r}")
    return NotCovered(f"{owner}.{name}" if module else f"MPI.{owner}.{name}")


class Refusing(type):
    """The metaclass of the stand-in's classes of ``mpi4py.MPI``: a name of mpi4py's class
    that the stand-in's lacks, read from the class itself, is a ``NotCovered`` too."""

    _mpi_names: str                                 # set by MPIObject and its subclasses

    def __getattr__(cls, name: str) -> NotCovered:
        if name.startswith("_"):                     # Python's and tools' own probes
            raise AttributeError(name)
        return not_covered(cls._mpi_names, name)


class MPIObject(metaclass=Refusing):
    """The base of the stand-in's classes of ``mpi4py.MPI``. ``_mpi_names``: the class of
    mpi4py whose names it answers for (``NAMES``)."""

    _mpi_names = ""

    def __getattr__(self, name: str) -> NotCovered:
        return not_covered(self._mpi_names, name)
