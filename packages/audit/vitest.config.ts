import { benchmaxVitest } from "../../shared/vitest.preset.ts";

export default benchmaxVitest();
