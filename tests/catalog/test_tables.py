"""The catalog's data files (components/catalog/data/, read by components/catalog/tables.py): a malformed row is
refused with the file, the line (and the row's key) and the column named; the shipped tables load whole."""
from pathlib import Path

import pytest

from components.catalog import accelerators, instances, measurements
from components.catalog.tables import DATA, DataError

ACC_HEADER = "id,name,reported_mib,hbm_gbps,bf16_tflops,fp8_tflops,link,link_gbps,source,torch_total_gib\n"
L4 = "l4,NVIDIA L4,22888,300,121,242,pcie,25,NVIDIA datasheet,\n"
INST_HEADER = ("cloud,name,accelerator,gpus,vcpu,ram_gib,nvme_gb,network_gbps,fabric,price_hour,source,efa_interfaces,"
               "gke_accelerator,price_basis,price_read\n")
G6 = "aws,g6.xlarge,l4,1,4,16,250,2.5,,0.8048,shape: karpenter; price: aws.amazon.com/ec2/pricing,0,,,2025-10\n"
M_HEADER = ("id,gpu,model,precision,vllm,tp,pp,prompt_tokens,output_tokens,mode,concurrency,tpot_ms,ttft_ms,"
            "output_tps,total_tps,max_model_len,source,date,notes,flags,usable,read,"
            "tpot_p90_ms,tpot_p99_ms,ttft_p90_ms,ttft_p99_ms\n")
ROW = ("x-llama8b-h100-c4,h100,llama-3.1-8b,bf16,0.31.0,1,1,1024,128,closed,4,10.5,80,300,2700,8192,"
       "https://example.org/run,2026-12-01,{note},,true,2026-12-04,,,,\n")


def write(tmp_path: Path, name: str, *lines: str) -> Path:
    (tmp_path / name).write_text("".join(lines))
    return tmp_path


def test_a_row_without_a_source_is_refused_naming_file_line_and_column(tmp_path):
    folder = write(tmp_path, "accelerators.csv", "# a comment line\n", ACC_HEADER, L4.replace("NVIDIA datasheet", ""))
    with pytest.raises(DataError) as e:
        accelerators.load(folder)
    assert str(e.value) == f"{tmp_path}/accelerators.csv: line 3 (l4): column source: empty; every row names its source"
    folder = write(tmp_path, "published.csv", M_HEADER, ROW.replace("https://example.org/run", " "))
    (tmp_path / "texts.yaml").write_text("note: a shared note\n")
    with pytest.raises(DataError, match=r"published.csv: line 2 \(x-llama8b-h100-c4\): column source: empty; every "
                                        r"row names its source$"):
        measurements.load("published", tmp_path)


def test_an_unknown_accelerator_is_refused_with_the_known_ones(tmp_path):
    write(tmp_path, "instance_types.csv", INST_HEADER, G6, G6.replace("g6.xlarge,l4", "g6.2xlarge,l5"))
    with pytest.raises(DataError) as e:
        instances.load(tmp_path)
    assert str(e.value) == (f"{tmp_path}/instance_types.csv: line 3 (g6.2xlarge): column accelerator: unknown "
                            f"accelerator 'l5' (one of: a100-40gb, a100-80gb, a10g, b200, h100, h200, l4, l40s)")
    write(tmp_path, "blind9.csv", M_HEADER, ROW.replace(",h100,", ",h1000,"))
    (tmp_path / "texts.yaml").write_text("note: a shared note\n")
    with pytest.raises(DataError, match=r"blind9.csv: line 2 \(x-llama8b-h100-c4\): column gpu: unknown accelerator "
                                        r"'h1000' \(one of: a100-40gb, "):
        measurements.load("blind9", tmp_path)


@pytest.mark.parametrize("column, bad, why", [
    ("hbm_gbps", "fast", "'fast' is not a number (write it plain: 0.8048, 8192)"),
    ("reported_mib", "22888.5", "'22888.5' is not a whole number"),
    ("bf16_tflops", "inf", "'inf' is not a finite number"),
    ("bf16_tflops", "", "empty; this column needs a value"),
    ("link", "nvlink9", "unknown GPU link 'nvlink9' (one of: nvlink3, nvlink4, nvlink5, pcie)"),
])
def test_a_bad_cell_is_refused_naming_the_column(tmp_path, column, bad, why):
    cells = L4.rstrip("\n").split(",")
    cells[ACC_HEADER.rstrip("\n").split(",").index(column)] = bad
    write(tmp_path, "accelerators.csv", ACC_HEADER, "\n", ",".join(cells) + "\n")
    with pytest.raises(DataError) as e:
        accelerators.load(tmp_path)
    assert str(e.value) == f"{tmp_path}/accelerators.csv: line 3 (l4): column {column}: {why}"


def test_a_bad_measurement_number_or_flag_is_refused(tmp_path):
    (tmp_path / "texts.yaml").write_text("note: a shared note\n")
    for row, why in ((ROW.replace(",10.5,", ",ten,"), "column tpot_ms: 'ten' is not a number (write it plain: 0.8048, 8192)"),
                     (ROW.replace(",1,1,1024", ",2.5,1,1024"), "column tp: '2.5' is not a whole number"),
                     (ROW.replace(",1,1,1024", ",0,1,1024"), "column tp: 0 is not a positive whole number"),
                     (ROW.replace(",true,", ",yes,"), "column usable: 'yes' is not true or false"),
                     (ROW.replace(",closed,", ",open,"),
                      "column mode: unknown load mode 'open' (one of: burst, closed)"),
                     (ROW.replace(",2026-12-04,", ",last week,"), "column read: 'last week' is not a date "
                                                                    "(YYYY-MM or YYYY-MM-DD)"),
                     (ROW.replace("{note}", "{nope}"), "column notes: {nope} is not a text of texts.yaml in that "
                                                       "folder (note)")):
        write(tmp_path, "b.csv", M_HEADER, row)
        with pytest.raises(DataError) as e:
            measurements.load("b", tmp_path)
        assert str(e.value) == f"{tmp_path}/b.csv: line 2 (x-llama8b-h100-c4): {why}"


def test_header_cell_count_and_duplicate_keys_are_refused(tmp_path):
    write(tmp_path, "accelerators.csv", ACC_HEADER.replace(",source", ""), L4)
    with pytest.raises(DataError) as e:
        accelerators.load(tmp_path)
    assert str(e.value) == (f"{tmp_path}/accelerators.csv: line 1: header: missing column(s) source (expected: id,name,"
                            f"reported_mib,hbm_gbps,bf16_tflops,fp8_tflops,link,link_gbps,source,torch_total_gib)")
    write(tmp_path, "accelerators.csv", ACC_HEADER, L4.replace(",25,", ",25,extra,"))
    with pytest.raises(DataError, match=r"line 2 \(l4\): 11 cells, the header has 10 \(id,name,.*,torch_total_gib\); "
                                        r"quote a cell that holds a comma \(\"a, b\"\)$"):
        accelerators.load(tmp_path)
    write(tmp_path, "accelerators.csv", ACC_HEADER, L4.replace(",25,", ","))
    with pytest.raises(DataError, match=r"line 2 \(l4\): 9 cells, the header has 10 \(.*\); an empty cell is still "
                                        r"written \(,,\)$"):
        accelerators.load(tmp_path)
    write(tmp_path, "accelerators.csv", ACC_HEADER, L4, "# again\n", L4)
    with pytest.raises(DataError, match=r"accelerators.csv: line 4 \(l4\): id 'l4' is already on line 2; a key names "
                                        r"one row: change it or remove one of the two lines$"):
        accelerators.load(tmp_path)
    write(tmp_path, "instance_types.csv", INST_HEADER, G6.replace(",2025-10\n", ",\n"))
    with pytest.raises(DataError, match=r"line 2 \(g6.xlarge\): column price_read: empty; the day price_hour was read"):
        instances.load(tmp_path)


def test_the_shipped_tables_load_and_every_file_is_read():
    assert len(accelerators.load()) == 8 and len(instances.load()) == 50
    assert [len(measurements.load(n)) for n in ("published", "blind", "blind3", "blind4", "blind5")] == [
        47, 32, 49, 35, 28]
    # every CSV file is one of the tables the catalog reads (a stray file would be silently ignored)
    assert sorted(p.relative_to(DATA).as_posix() for p in DATA.rglob("*.csv")) == [
        "accelerators.csv", "aws_regions.csv", "estimators/heldout.csv", "instance_types.csv", "measurements/blind.csv", "measurements/blind3.csv",
        "measurements/blind4.csv", "measurements/blind5.csv", "measurements/published.csv", "not_on_demand.csv",
        "prices/capacity_blocks.csv", "prices/cpu_instances.csv", "prices/platform.csv", "prices/regional.csv",
        "prices/regions.csv",
        "prices/spot.csv"]


def test_a_file_not_in_utf8_is_refused_naming_the_line_and_a_byte_order_mark_is_read(tmp_path):
    (tmp_path / "accelerators.csv").write_bytes((ACC_HEADER + L4.replace("NVIDIA datasheet", "fiche NVIDIA (été)")
                                                 ).encode("latin-1"))
    with pytest.raises(DataError) as e:
        accelerators.load(tmp_path)
    assert str(e.value) == (f"{tmp_path}/accelerators.csv: line 2: byte 0xe9 is not UTF-8; save the file as UTF-8 "
                            f"(CSV UTF-8 in a spreadsheet program)")
    (tmp_path / "accelerators.csv").write_text("\ufeff" + ACC_HEADER + L4, encoding="utf-8")  # as Excel saves it
    assert accelerators.load(tmp_path)["l4"].source == "NVIDIA datasheet"


def test_a_texts_file_that_is_not_yaml_is_refused_naming_the_line(tmp_path):
    (tmp_path / "texts.yaml").write_text("note: a shared note\nother: 'unclosed\n")
    write(tmp_path, "b.csv", M_HEADER, ROW)
    with pytest.raises(DataError) as e:
        measurements.load("b", tmp_path)
    assert str(e.value) == (f"{tmp_path}/texts.yaml: line 3, column 1: not YAML (found unexpected end of stream); "
                            f"each text is one `name: text` line (quote a text that holds ': ' or starts with a quote)")
