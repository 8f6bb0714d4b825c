package store

// The console's functions are a reviewed allow-list by name: what an analyst
// of traces, runs, steps and scores uses (arithmetic, comparisons, strings,
// dates, JSON, arrays with lambdas, hashes, URL parts, aggregates and window
// functions). A name the engine aliases (SUBSTRING, DATE_DIFF, median) is
// followed to the function it names first (functionPolicy.resolve). Left out
// on purpose, beside everything that reaches files, URLs, other servers, the
// host or the settings (consoleDeniedFunctions): functions whose work per row
// grows with an argument rather than with the rows read — string distances
// (editDistance, damerauLevenshteinDistance, jaroSimilarity,
// ngramDistance, stringJaccardIndex, arrayLevenshteinDistance), generators
// of big values (range, repeat, replicate, space, leftPad, rightPad,
// arrayWithConstant, arrayResize, timeSlots, randomString, bar), geo
// functions (h3kRing and every h3*, s2*, geohash*, polygon functions),
// arrayReduce and arrayFold (an aggregate or a loop chosen by a string),
// sequenceMatch and the like. The engine's own limits and the worker's time
// limit still bound what is left (console_worker.go): this list keeps the
// common bombs from even starting, it is not what stops them.

// consoleFunctions are the scalar functions (canonical names, as the engine's
// system.functions lists them) a console statement may call.
var consoleFunctions = setOf(
	// arithmetic, comparison, logic, conditions, NULL
	"plus", "minus", "multiply", "divide", "intDiv", "intDivOrZero", "modulo", "moduloOrZero",
	"positiveModulo", "negate", "abs", "gcd", "lcm", "max2", "min2", "isFinite", "isInfinite", "isNaN",
	"ifNotFinite", "equals", "notEquals", "less", "greater", "lessOrEquals", "greaterOrEquals",
	"in", "notIn", "nullIn", "notNullIn", "globalIn", "globalNotIn", "isDistinctFrom", "isNotDistinctFrom",
	"and", "or", "not", "xor", "if", "multiIf", "caseWithExpression", "greatest", "least", "clamp",
	"isNull", "isNotNull", "coalesce", "ifNull", "nullIf", "assumeNotNull", "toNullable", "isZeroOrNull",
	// rounding and mathematics
	"round", "roundBankers", "floor", "ceil", "trunc", "roundDown", "roundToExp2", "roundDuration", "roundAge",
	"exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "pow", "sign", "pi", "e",
	"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "hypot", "erf", "erfc", "sigmoid",
	"degrees", "radians", "widthBucket",
	// bits
	"bitAnd", "bitOr", "bitXor", "bitNot", "bitShiftLeft", "bitShiftRight", "bitCount", "bitTest",
	// type conversion
	"CAST", "accurateCast", "accurateCastOrNull", "toString", "toFixedString", "toLowCardinality", "toBool",
	"toInt8", "toInt16", "toInt32", "toInt64", "toUInt8", "toUInt16", "toUInt32", "toUInt64",
	"toInt64OrNull", "toInt64OrZero", "toUInt64OrNull", "toUInt64OrZero", "toInt32OrNull", "toInt32OrZero",
	"toFloat32", "toFloat64", "toFloat64OrNull", "toFloat64OrZero",
	"toDecimal32", "toDecimal64", "toDecimal128", "toDecimalString",
	"toDate", "toDate32", "toDateTime", "toDateTime64", "toDateOrNull", "toDateOrZero",
	"toDateTimeOrNull", "toDateTimeOrZero", "toDateTime64OrNull", "toDateTime64OrZero",
	"parseDateTime", "parseDateTimeOrNull", "parseDateTimeBestEffort", "parseDateTimeBestEffortOrNull",
	"parseDateTimeBestEffortOrZero", "parseDateTime64BestEffort", "parseDateTime64BestEffortOrNull",
	"fromUnixTimestamp64Second", "fromUnixTimestamp64Milli", "fromUnixTimestamp64Micro", "fromUnixTimestamp64Nano",
	"toUnixTimestamp64Second", "toUnixTimestamp64Milli", "toUnixTimestamp64Micro", "toUnixTimestamp64Nano",
	"toUUID", "toUUIDOrNull", "toTypeName",
	"toIntervalSecond", "toIntervalMinute", "toIntervalHour", "toIntervalDay", "toIntervalWeek",
	"toIntervalMonth", "toIntervalQuarter", "toIntervalYear", "toIntervalMillisecond",
	// dates and times
	"now", "now64", "today", "yesterday", "toYear", "toQuarter", "toMonth", "toDayOfMonth", "toDayOfWeek",
	"toDayOfYear", "toHour", "toMinute", "toSecond", "toMillisecond", "toISOWeek", "toISOYear", "toWeek",
	"toYearWeek", "toStartOfYear", "toStartOfQuarter", "toStartOfMonth", "toStartOfWeek", "toMonday",
	"toStartOfDay", "toStartOfHour", "toStartOfMinute", "toStartOfSecond", "toStartOfFiveMinutes",
	"toStartOfTenMinutes", "toStartOfFifteenMinutes", "toStartOfInterval", "toLastDayOfMonth",
	"toYYYYMM", "toYYYYMMDD", "toYYYYMMDDhhmmss", "toUnixTimestamp", "fromUnixTimestamp", "toTimezone",
	"toRelativeDayNum", "toRelativeHourNum", "toRelativeMinuteNum", "toRelativeSecondNum",
	"dateDiff", "dateTrunc", "dateName", "monthName", "age", "formatDateTime", "makeDate", "makeDateTime",
	"timeSlot", "addSeconds", "addMinutes", "addHours", "addDays", "addWeeks", "addMonths", "addQuarters",
	"addYears", "addInterval", "subtractSeconds", "subtractMinutes", "subtractHours", "subtractDays",
	"subtractWeeks", "subtractMonths", "subtractQuarters", "subtractYears", "subtractInterval",
	// strings
	"length", "lengthUTF8", "empty", "notEmpty", "lower", "upper", "lowerUTF8", "upperUTF8", "reverse",
	"reverseUTF8", "concat", "concatWithSeparator", "substring", "substringUTF8", "left", "right",
	"leftUTF8", "rightUTF8", "trimBoth", "trimLeft", "trimRight", "startsWith", "endsWith",
	"position", "positionCaseInsensitive", "positionUTF8", "positionCaseInsensitiveUTF8", "locate",
	"like", "notLike", "ilike", "notILike", "match", "extract", "extractAll", "extractGroups",
	"replaceOne", "replaceAll", "replaceRegexpOne", "replaceRegexpAll", "format",
	"countSubstrings", "countSubstringsCaseInsensitive", "countMatches", "countMatchesCaseInsensitive",
	"hasToken", "hasTokenCaseInsensitive", "multiSearchAny", "multiSearchAnyCaseInsensitive",
	"multiSearchAnyUTF8", "multiSearchAnyCaseInsensitiveUTF8", "multiSearchFirstIndex",
	"splitByChar", "splitByString", "splitByWhitespace", "splitByRegexp", "arrayStringConcat",
	"firstLine", "initcap", "toValidUTF8", "isValidUTF8", "base64Encode", "base64Decode",
	"tryBase64Decode", "hex", "unhex", "encodeURLComponent", "decodeURLComponent",
	// JSON
	"JSONExtract", "JSONExtractString", "JSONExtractInt", "JSONExtractUInt", "JSONExtractFloat",
	"JSONExtractBool", "JSONExtractRaw", "JSONExtractArrayRaw", "JSONExtractKeys",
	"JSONExtractKeysAndValues", "JSONExtractKeysAndValuesRaw", "JSONHas", "JSONLength", "JSONType",
	"JSONArrayLength", "JSON_VALUE", "JSON_QUERY", "JSON_EXISTS", "isValidJSON", "toJSONString",
	// arrays, maps, tuples (lambdas are syntax: consoleSyntaxFunctions)
	"array", "arrayElement", "has", "hasAll", "hasAny", "indexOf", "countEqual", "arrayConcat", "arrayMap",
	"arrayFilter", "arrayExists", "arrayAll", "arrayCount", "arraySum", "arrayAvg", "arrayMin", "arrayMax",
	"arrayFirst", "arrayLast", "arrayFirstIndex", "arraySort", "arrayReverseSort", "arrayDistinct",
	"arrayUniq", "arrayJoin", "arraySlice", "arrayPushBack", "arrayPushFront", "arrayPopBack",
	"arrayPopFront", "arrayReverse", "arrayFlatten", "arrayCompact", "arrayZip", "arrayEnumerate",
	"arrayEnumerateUniq", "arrayCumSum", "arrayDifference", "arrayIntersect",
	"map", "mapKeys", "mapValues", "mapContainsKey", "mapFilter", "mapApply",
	"tuple", "tupleElement",
	// hashes, identifiers, URL parts, IP addresses
	"sipHash64", "sipHash128", "cityHash64", "xxHash64", "xxh3", "murmurHash3_64", "farmHash64",
	"intHash64", "halfMD5", "MD5", "SHA1", "SHA256", "generateUUIDv4", "generateUUIDv7",
	"domain", "domainWithoutWWW", "topLevelDomain", "protocol", "path", "pathFull", "queryString",
	"fragment", "extractURLParameter", "extractURLParameters", "cutQueryString", "cutWWW", "port", "netloc",
	"IPv4NumToString", "IPv4StringToNum", "toIPv4", "toIPv6", "IPv6NumToString", "isIPv4String", "isIPv6String",
	// random numbers, and computation on the statement's own values
	"rand", "rand64", "randCanonical",
	"currentDatabase", "materialize", "ignore", "identity", "isConstant", "throwIf", "transform",
	"formatReadableSize", "formatReadableQuantity", "formatReadableTimeDelta", "byteSize", "visibleWidth",
)

// consoleAggregates are the aggregate and window functions a console
// statement may call, each with the combinators of consoleCombinators.
var consoleAggregates = setOf(
	"count", "sum", "avg", "min", "max", "any", "anyLast", "argMin", "argMax", "avgWeighted",
	"uniq", "uniqExact", "uniqCombined", "uniqCombined64", "uniqHLL12", "uniqUpTo",
	"groupArray", "groupUniqArray", "groupArraySample", "groupConcat", "groupBitAnd", "groupBitOr", "groupBitXor",
	"quantile", "quantiles", "quantileExact", "quantilesExact", "quantileExactWeighted", "quantilesExactWeighted",
	"quantileTDigest", "quantilesTDigest", "quantileTiming", "quantilesTiming", "quantileDeterministic",
	"stddevPop", "stddevSamp", "varPop", "varSamp", "covarPop", "covarSamp", "corr",
	"skewPop", "skewSamp", "kurtPop", "kurtSamp", "entropy", "simpleLinearRegression",
	"studentTTest", "welchTTest", "mannWhitneyUTest", "topK", "topKWeighted", "histogram",
	"sumWithOverflow", "sumKahan", "deltaSum", "boundingRatio", "retention", "windowFunnel",
	"row_number", "rank", "denseRank", "percentRank", "cume_dist", "ntile", "lag", "lead",
	"lagInFrame", "leadInFrame", "nth_value",
)

// consoleCombinators are the aggregate combinators a console statement may
// use (sumIf, uniqArray, countDistinct, quantileState …). Resample, which
// makes one state per bucket of a caller-chosen range, is left out.
var consoleCombinators = setOf("If", "Array", "Distinct", "OrNull", "OrDefault", "State", "Merge",
	"ForEach", "Map", "SimpleState", "ArgMin", "ArgMax", "Null")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
