"""Which function calls a read-only statement may make, and how MariaDB finds the function.

A SELECT is only as read-only as the functions it calls, and stored (or loadable) functions
can change data. What decides whether ``name(…)`` runs a built-in or a stored function of
that name in the current schema is the parser, and it is stricter than it looks. Verified on
MariaDB 10.11 by creating a stored function of each name in a scratch schema and calling it
in every spelling (tests/sql/test_function_catalogue.py repeats this when a server is
available):

- ``NAME(`` unquoted, unqualified, with ``(`` right after the name: the built-in, for every
  name in SAFE_FUNCTIONS, at any argument count and position. Names that are built-ins only
  on MySQL (ANY_VALUE, BIN_TO_UUID, UUID_TO_BIN, REGEXP_LIKE, TO_DATE, TRUNC, ST_GEOHASH,
  VEC_*, JSON_SCHEMA_VALID, …) are not built-ins here, so on MariaDB they call the stored
  function of that name: they are not in the list. Nor are POINT, POLYGON, LINESTRING,
  MULTIPOINT, MULTILINESTRING, MULTIPOLYGON and GEOMETRYCOLLECTION: the grammar takes them
  only with their own argument count (POINT(x, y)), any other count calls the stored function.
- ``NAME (`` or ``NAME/**/(`` — anything between the name and ``(``: SUM, COUNT, MAX, MIN,
  NOW, TRIM, CAST, SUBSTRING, GROUP_CONCAT, the window functions and about thirty more are
  keywords only when "(" follows at once; otherwise the name is an identifier and the call
  goes to a stored function. A gap is therefore read as a call to an unknown function, except
  after NEVER_STORED words (reserved words and keyword-only words, which the parser never
  takes for a function name: ``IN (``, ``OVER (``, ``IF (``, ``ANY (``).
- `` `name`( `` (quoted): always an identifier. It reaches the built-in only for the native
  functions (CONCAT, GET_LOCK, LOAD_FILE, …) and a stored function for the others (`` `sum`( ``),
  so a quoted call is never read-only; a side-effect name keeps its own reason.
- ``db.name(``: a stored function.
- Words that are syntax only in one place: ``MATCH (…) AGAINST (…)``, JSON_TABLE's
  ``'path' COLUMNS (…)``, and JSON_TABLE itself when its arguments hold that COLUMNS clause.
  Anywhere else these non-reserved words call a stored function (``SELECT AGAINST(1)``), so
  queries.py accepts them only in that context. The same holds for SQL_CACHE, SQL_NO_CACHE
  and SQL_BUFFER_RESULT, OF, PATH, NESTED, MINUS, LATERAL, ESCAPE, GEOMETRY and VECTOR,
  which are therefore not in PAREN_KEYWORDS: followed by "(" they are calls.

The lists follow MariaDB 10.11, the server dbagent runs against. Residual risk on MySQL: a
MariaDB-only built-in (NVL2, SFORMAT, NATURAL_SORT_KEY, the *_ORACLE functions, …) is an
ordinary name there, which a stored function may take; the bot's READ ONLY session still
stops such a function from writing tables.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Built-ins with effects beyond returning a value, and why each is dangerous. Any call to
# these makes a statement at least a write.
SIDE_EFFECT_FUNCTIONS: dict[str, str] = {
    # Sequences (MariaDB): each call advances or resets the sequence, a persistent change.
    "NEXTVAL": "NEXTVAL() advances a sequence, a persistent change",
    "SETVAL": "SETVAL() sets a sequence's next value, a persistent change",
    # Named user locks are held by the session beyond the statement and block any other
    # client (application code included) that asks for the same name.
    "GET_LOCK": "GET_LOCK() takes a named lock that outlives the statement",
    "RELEASE_LOCK": "RELEASE_LOCK() releases a named lock, possibly one another task relies on",
    "RELEASE_ALL_LOCKS": "RELEASE_ALL_LOCKS() releases every named lock the session holds",
    # Holding a connection (and any locks) for as long as asked: a denial-of-service tool.
    "SLEEP": "SLEEP() holds the connection and its locks for as long as asked",
    "BENCHMARK": "BENCHMARK() burns server CPU by evaluating an expression repeatedly",
    # Reads any file the server process can read (FILE privilege): exfiltration, not a query.
    "LOAD_FILE": "LOAD_FILE() reads a file from the database server's file system",
    # Replication waits block the connection until a replica catches up, maybe forever.
    "MASTER_POS_WAIT": "MASTER_POS_WAIT() blocks until replication reaches a position",
    "SOURCE_POS_WAIT": "SOURCE_POS_WAIT() blocks until replication reaches a position",
    "MASTER_GTID_WAIT": "MASTER_GTID_WAIT() blocks until replication reaches a GTID",
    "WAIT_FOR_EXECUTED_GTID_SET": "WAIT_FOR_EXECUTED_GTID_SET() blocks until GTIDs are applied",
    "WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS": "WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS() blocks on a replica",
    "WSREP_SYNC_WAIT_UPTO_GTID": "WSREP_SYNC_WAIT_UPTO_GTID() blocks until Galera catches up",
    # Well-known loadable functions (lib_mysqludf_sys): they run shell commands on the server.
    "SYS_EXEC": "SYS_EXEC() runs a shell command on the database server",
    "SYS_EVAL": "SYS_EVAL() runs a shell command on the database server",
    "SYS_GET": "SYS_GET() reads the database server's environment",
    "SYS_SET": "SYS_SET() changes the database server's environment",
    # MySQL plugin functions that change server state.
    "KEYRING_KEY_GENERATE": "KEYRING_KEY_GENERATE() adds a key to the server keyring",
    "KEYRING_KEY_STORE": "KEYRING_KEY_STORE() adds a key to the server keyring",
    "KEYRING_KEY_REMOVE": "KEYRING_KEY_REMOVE() deletes a key from the server keyring",
    "VERSION_TOKENS_SET": "VERSION_TOKENS_SET() changes the server's version tokens",
    "VERSION_TOKENS_EDIT": "VERSION_TOKENS_EDIT() changes the server's version tokens",
    "VERSION_TOKENS_DELETE": "VERSION_TOKENS_DELETE() changes the server's version tokens",
    "VERSION_TOKENS_LOCK_SHARED": "VERSION_TOKENS_LOCK_SHARED() takes a server lock",
    "VERSION_TOKENS_LOCK_EXCLUSIVE": "VERSION_TOKENS_LOCK_EXCLUSIVE() takes a server lock",
    "SERVICE_GET_READ_LOCKS": "SERVICE_GET_READ_LOCKS() takes locking-service locks",
    "SERVICE_GET_WRITE_LOCKS": "SERVICE_GET_WRITE_LOCKS() takes locking-service locks",
    "SERVICE_RELEASE_LOCKS": "SERVICE_RELEASE_LOCKS() releases locking-service locks",
    "AUDIT_LOG_ROTATE": "AUDIT_LOG_ROTATE() rotates the server's audit log",
    "GROUP_REPLICATION_SET_AS_PRIMARY": "GROUP_REPLICATION_SET_AS_PRIMARY() fails over a cluster",
    "GROUP_REPLICATION_SWITCH_TO_SINGLE_PRIMARY_MODE": "changes the replication group's mode",
    "GROUP_REPLICATION_SWITCH_TO_MULTI_PRIMARY_MODE": "changes the replication group's mode",
}

# Built-ins whose argument names something of the whole server, not of the database: named
# locks live in one namespace shared with every session (IS_USED_LOCK answers another
# connection's id), BINLOG_GTID_POS opens the binary log's files. Their calls reach the whole
# server (queries.named_reads), which the guard refuses. GET_LOCK, RELEASE_LOCK and
# RELEASE_ALL_LOCKS (SIDE_EFFECT_FUNCTIONS) reach it too.
SERVER_NAME_FUNCTIONS: dict[str, str] = {
    "IS_FREE_LOCK": "IS_FREE_LOCK() asks about a named lock of the whole server",
    "IS_USED_LOCK": "IS_USED_LOCK() tells which other connection holds a named lock",
    "BINLOG_GTID_POS": "BINLOG_GTID_POS() reads the server's binary log files",
    "GET_LOCK": "GET_LOCK() takes a named lock that outlives the statement",
    "RELEASE_LOCK": "RELEASE_LOCK() releases a named lock, possibly one another task relies on",
    "RELEASE_ALL_LOCKS": "RELEASE_ALL_LOCKS() releases every named lock the session holds",
}

# Built-ins that take effect only through their result (or, like LASTVAL, IS_FREE_LOCK and
# UUID_SHORT, read or bump in-memory state without changing data or holding anything).
# LAST_INSERT_ID(expr) sets the session's value returned by the next LAST_INSERT_ID(): a
# session-local value, no data, so it stays here.
SAFE_FUNCTIONS: frozenset[str] = _words(
    """
    ABS ACOS ADDDATE ADDTIME ADD_MONTHS AES_DECRYPT AES_ENCRYPT AREA ASBINARY ASCII ASIN
    ASTEXT ASWKB ASWKT ATAN ATAN2 AVG BIN BINLOG_GTID_POS BIT_AND BIT_COUNT BIT_LENGTH
    BIT_OR BIT_XOR BOUNDARY BUFFER CAST CEIL CEILING CENTROID CHAR CHARACTER_LENGTH CHARSET
    CHAR_LENGTH CHR COALESCE COERCIBILITY COLLATION COLUMN_ADD COLUMN_CHECK COLUMN_CREATE
    COLUMN_DELETE COLUMN_EXISTS COLUMN_GET COLUMN_JSON COLUMN_LIST COMPRESS CONCAT
    CONCAT_OPERATOR_ORACLE CONCAT_WS CONNECTION_ID CONTAINS CONV CONVERT CONVERT_TZ
    CONVEXHULL COS COT COUNT CRC32 CRC32C CROSSES CUME_DIST CURDATE CURRENT_DATE
    CURRENT_ROLE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER CURTIME DATABASE DATE DATEDIFF
    DATE_ADD DATE_FORMAT DATE_SUB DAY DAYNAME DAYOFMONTH DAYOFWEEK DAYOFYEAR DECODE
    DECODE_HISTOGRAM DECODE_ORACLE DEFAULT DEGREES DENSE_RANK DES_DECRYPT DES_ENCRYPT
    DIMENSION DISJOINT ELT ENCODE ENCRYPT ENDPOINT ENVELOPE EQUALS EXP EXPORT_SET
    EXTERIORRING EXTRACT EXTRACTVALUE FIELD FIND_IN_SET FIRST_VALUE FLOOR FORMAT FOUND_ROWS
    FROM_BASE64 FROM_DAYS FROM_UNIXTIME GEOMCOLLFROMTEXT GEOMCOLLFROMWKB
    GEOMETRYCOLLECTIONFROMTEXT GEOMETRYCOLLECTIONFROMWKB GEOMETRYFROMTEXT GEOMETRYFROMWKB
    GEOMETRYN GEOMETRYTYPE GEOMFROMTEXT GEOMFROMWKB GET_FORMAT GLENGTH GREATEST GROUP_CONCAT
    HEX HOUR IF IFNULL INET6_ATON INET6_NTOA INET_ATON INET_NTOA INSERT INSTR INTERIORRINGN
    INTERSECTS INTERVAL ISCLOSED ISEMPTY ISNULL ISRING ISSIMPLE IS_FREE_LOCK IS_IPV4
    IS_IPV4_COMPAT IS_IPV4_MAPPED IS_IPV6 IS_USED_LOCK JSON_ARRAY JSON_ARRAYAGG
    JSON_ARRAY_APPEND JSON_ARRAY_INSERT JSON_COMPACT JSON_CONTAINS JSON_CONTAINS_PATH
    JSON_DEPTH JSON_DETAILED JSON_EQUALS JSON_EXISTS JSON_EXTRACT JSON_INSERT JSON_KEYS
    JSON_LENGTH JSON_LOOSE JSON_MERGE JSON_MERGE_PATCH JSON_MERGE_PRESERVE JSON_NORMALIZE
    JSON_OBJECT JSON_OBJECTAGG JSON_OVERLAPS JSON_PRETTY JSON_QUERY JSON_QUOTE JSON_REMOVE
    JSON_REPLACE JSON_SEARCH JSON_SET JSON_TYPE JSON_UNQUOTE JSON_VALID JSON_VALUE LAG
    LASTVAL LAST_DAY LAST_INSERT_ID LAST_VALUE LCASE LEAD LEAST LEFT LENGTH LENGTHB
    LINEFROMTEXT LINEFROMWKB LINESTRINGFROMTEXT LINESTRINGFROMWKB LN LOCALTIME
    LOCALTIMESTAMP LOCATE LOG LOG10 LOG2 LOWER LPAD LPAD_ORACLE LTRIM LTRIM_ORACLE MAKEDATE
    MAKETIME MAKE_SET MAX MBRCONTAINS MBRDISJOINT MBREQUAL MBREQUALS MBRINTERSECTS
    MBROVERLAPS MBRTOUCHES MBRWITHIN MD5 MEDIAN MICROSECOND MID MIN MINUTE MLINEFROMTEXT
    MLINEFROMWKB MOD MONTH MONTHNAME MPOINTFROMTEXT MPOINTFROMWKB MPOLYFROMTEXT MPOLYFROMWKB
    MULTILINESTRINGFROMTEXT MULTILINESTRINGFROMWKB MULTIPOINTFROMTEXT MULTIPOINTFROMWKB
    MULTIPOLYGONFROMTEXT MULTIPOLYGONFROMWKB NAME_CONST NATURAL_SORT_KEY NOW NTH_VALUE NTILE
    NULLIF NUMGEOMETRIES NUMINTERIORRINGS NUMPOINTS NVL NVL2 OCT OCTET_LENGTH OLD_PASSWORD
    ORD OVERLAPS PASSWORD PERCENTILE_CONT PERCENTILE_DISC PERCENT_RANK PERIOD_ADD
    PERIOD_DIFF PI POINTFROMTEXT POINTFROMWKB POINTN POINTONSURFACE POLYFROMTEXT POLYFROMWKB
    POLYGONFROMTEXT POLYGONFROMWKB POSITION POW POWER QUARTER QUOTE RADIANS RAND
    RANDOM_BYTES RANK REGEXP_INSTR REGEXP_REPLACE REGEXP_SUBSTR REPEAT REPLACE
    REPLACE_ORACLE REVERSE RIGHT ROUND ROWNUM ROW_COUNT ROW_NUMBER RPAD RPAD_ORACLE RTRIM
    RTRIM_ORACLE SCHEMA SCHEMAS SECOND SEC_TO_TIME SESSION_USER SFORMAT SHA SHA1 SHA2 SIGN
    SIN SOUNDEX SPACE SQRT SRID STARTPOINT STD STDDEV STDDEV_POP STDDEV_SAMP STRCMP
    STR_TO_DATE ST_AREA ST_ASBINARY ST_ASGEOJSON ST_ASTEXT ST_ASWKB ST_ASWKT ST_BOUNDARY
    ST_BUFFER ST_CENTROID ST_CONTAINS ST_CONVEXHULL ST_CROSSES ST_DIFFERENCE ST_DIMENSION
    ST_DISJOINT ST_DISTANCE ST_DISTANCE_SPHERE ST_ENDPOINT ST_ENVELOPE ST_EQUALS
    ST_EXTERIORRING ST_GEOMCOLLFROMTEXT ST_GEOMCOLLFROMWKB ST_GEOMETRYCOLLECTIONFROMTEXT
    ST_GEOMETRYCOLLECTIONFROMWKB ST_GEOMETRYFROMTEXT ST_GEOMETRYFROMWKB ST_GEOMETRYN
    ST_GEOMETRYTYPE ST_GEOMFROMGEOJSON ST_GEOMFROMTEXT ST_GEOMFROMWKB ST_INTERIORRINGN
    ST_INTERSECTION ST_INTERSECTS ST_ISCLOSED ST_ISEMPTY ST_ISRING ST_ISSIMPLE ST_LENGTH
    ST_LINEFROMTEXT ST_LINEFROMWKB ST_LINESTRINGFROMTEXT ST_LINESTRINGFROMWKB
    ST_MLINEFROMTEXT ST_MLINEFROMWKB ST_MPOINTFROMTEXT ST_MPOINTFROMWKB ST_MPOLYFROMTEXT
    ST_MPOLYFROMWKB ST_MULTILINESTRINGFROMTEXT ST_MULTILINESTRINGFROMWKB
    ST_MULTIPOINTFROMTEXT ST_MULTIPOINTFROMWKB ST_MULTIPOLYGONFROMTEXT
    ST_MULTIPOLYGONFROMWKB ST_NUMGEOMETRIES ST_NUMINTERIORRINGS ST_NUMPOINTS ST_OVERLAPS
    ST_POINTFROMTEXT ST_POINTFROMWKB ST_POINTN ST_POINTONSURFACE ST_POLYFROMTEXT
    ST_POLYFROMWKB ST_POLYGONFROMTEXT ST_POLYGONFROMWKB ST_RELATE ST_SRID ST_STARTPOINT
    ST_SYMDIFFERENCE ST_TOUCHES ST_UNION ST_WITHIN ST_X ST_Y SUBDATE SUBSTR SUBSTRING
    SUBSTRING_INDEX SUBSTR_ORACLE SUBTIME SUM SYSDATE SYSTEM_USER SYS_GUID TAN TIME TIMEDIFF
    TIMESTAMP TIMESTAMPADD TIMESTAMPDIFF TIME_FORMAT TIME_TO_SEC TOUCHES TO_BASE64 TO_CHAR
    TO_DAYS TO_SECONDS TRIM TRIM_ORACLE TRUNCATE UCASE UNCOMPRESS UNCOMPRESSED_LENGTH UNHEX
    UNIX_TIMESTAMP UPDATEXML UPPER USER UTC_DATE UTC_TIME UTC_TIMESTAMP UUID UUID_SHORT
    VALUE VALUES VARIANCE VAR_POP VAR_SAMP VERSION WEEK WEEKDAY WEEKOFYEAR WEIGHT_STRING
    WITHIN WSREP_LAST_SEEN_GTID WSREP_LAST_WRITTEN_GTID X Y YEAR YEARWEEK
    """
)

# Words that may stand right before "(" without being a call: keywords that open a
# subquery, list, window, index hint or partition list, and the type names of CAST,
# CONVERT and JSON_TABLE columns. Only reserved or keyword-only words (and ROW, whose
# ROW(…) is the row constructor): a non-reserved word before "(" is a stored-function call.
PAREN_KEYWORDS: frozenset[str] = _words(
    """
    ALL AND ANY AS ASC BETWEEN BIGINT BINARY BIT BLOB BOOL BOOLEAN BOTH BY CASE CHARACTER
    DATETIME DEC DECIMAL DESC DISTINCT DISTINCTROW DIV DOUBLE ELSE ENUM EXCEPT EXISTS FIXED
    FLOAT FOR FROM GROUP HAVING HIGH_PRIORITY IN INDEX INT INT1 INT2 INT3 INT4 INT8 INTEGER
    INTERSECT IS JOIN JSON KEY LEADING LIKE LIMIT LONGTEXT MATCH MEDIUMINT MEDIUMTEXT NCHAR
    NOT NUMERIC NVARCHAR OFFSET ON OR ORDER OVER PARTITION REAL REGEXP RETURNING RLIKE ROW
    SELECT SEPARATOR SIGNED SMALLINT SOME SOUNDS SQL_BIG_RESULT SQL_CALC_FOUND_ROWS
    SQL_SMALL_RESULT STRAIGHT_JOIN TEXT THEN TINYINT TINYTEXT TRAILING UNION UNSIGNED USING
    VARBINARY VARCHAR VARCHAR2 WHEN WHERE WITH XOR
    """
)

# Words the parser always reads as keywords, never as the name of a stored function, so that
# "WORD (" with a gap (space, newline or comment) before the parenthesis is still no call to
# a stored function: reserved words (IN, AND, OVER, IF, LEFT, REPLACE, VALUES, …) and
# keyword-only words (ANY, SOME, TEXT, JSON, DATETIME, LASTVAL, TIMESTAMPADD, …). Verified
# on MariaDB 10.11 like the lists above; every other name with a gap is an unknown call.
NEVER_STORED: frozenset[str] = _words(
    """
    ALL AND ANY AS ASC BETWEEN BIGINT BINARY BIT BLOB BOOL BOOLEAN BOTH BY CASE CHAR
    CHARACTER COLUMN_GET CONVERT CURRENT_DATE CURRENT_ROLE CURRENT_TIME CURRENT_TIMESTAMP
    CURRENT_USER DATETIME DEC DECIMAL DEFAULT DESC DISTINCT DISTINCTROW DIV DOUBLE ELSE ENUM
    EXCEPT EXISTS FIXED FLOAT FOR FROM GET_FORMAT GROUP HAVING HIGH_PRIORITY IF IN INDEX
    INSERT INT INT1 INT2 INT3 INT4 INT8 INTEGER INTERSECT INTERVAL IS JOIN JSON KEY LASTVAL
    LEADING LEFT LIKE LIMIT LOCALTIME LOCALTIMESTAMP LONGTEXT MATCH MEDIUMINT MEDIUMTEXT MOD
    NCHAR NOT NUMERIC NVARCHAR OFFSET ON OR ORDER OVER PARTITION REAL REGEXP REPEAT REPLACE
    RETURNING RIGHT RLIKE ROW_NUMBER SCHEMAS SELECT SEPARATOR SIGNED SMALLINT SOME SOUNDS
    SQL_BIG_RESULT SQL_CALC_FOUND_ROWS SQL_SMALL_RESULT STRAIGHT_JOIN TEXT THEN TIMESTAMPADD
    TIMESTAMPDIFF TINYINT TINYTEXT TRAILING UNION UNSIGNED USING UTC_DATE UTC_TIME
    UTC_TIMESTAMP VALUE VALUES VARBINARY VARCHAR VARCHAR2 WHEN WHERE WITH XOR
    """
)

# Non-reserved words that are syntax only in one context (see the module docstring);
# queries.py checks the context, and anywhere else they are calls of unknown functions.
CONTEXT_KEYWORDS: frozenset[str] = frozenset({"AGAINST", "COLUMNS", "JSON_TABLE"})
