package io.sparklock.shim.wire;

/**
 * Who runs a statement. {@code client} is null when the server does not know it; {@code agent}
 * is what it runs for: the server session ({@code thrift/<id>}, {@code connect/<id>}), else the
 * Spark application id (SHOW LOCKS EXTENDED's {@code agent}).
 */
public record Caller(String user, String client, String agent) {}
