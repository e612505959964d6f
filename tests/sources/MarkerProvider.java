import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.types.StructType;

/**
 * A non-file data source for tests: {@code df.write.format("MarkerProvider").save(p)} runs as
 * Spark's SaveIntoDataSourceCommand (as JDBC, Delta or Hudi path writes do) and writes the number
 * of rows and the save mode to {@code p/_marker}. No Spark job of its own beyond counting.
 */
public final class MarkerProvider implements CreatableRelationProvider {
  @Override
  public BaseRelation createRelation(
      SQLContext sqlContext,
      SaveMode mode,
      scala.collection.immutable.Map<String, String> parameters,
      Dataset<Row> data) {
    String path = parameters.get("path").get();
    Path dir = Path.of(path.startsWith("file:") ? java.net.URI.create(path).getPath() : path);
    try {
      Files.createDirectories(dir);
      Files.writeString(dir.resolve("_marker"), data.count() + " " + mode);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    StructType schema = data.schema();
    return new BaseRelation() {
      @Override
      public SQLContext sqlContext() {
        return sqlContext;
      }

      @Override
      public StructType schema() {
        return schema;
      }
    };
  }
}
